"""Holding a zone proves nothing until the public DNS delegates it to svc; a squatter never gets a
name served, and the real owner takes over what the squatter holds unproven. End to end: `svc
serve` as on a shared server (its own PowerDNS NOT trusted), a second PowerDNS standing for the
public DNS (tests/support/public_dns.py: "example." delegating children to svc's nameservers, or
hosting them as the real owner's DNS host), and the edge (nginx) answering the names."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.hostnames.conftest import until
from tests.support import components
from tests.support.bundles import site
from tests.support.pdns import PDNS_REQUIRED
from tests.support.public_dns import ELSEWHERE, PublicDns, running_public_dns
from tests.support.serve import Server, svc_serve

pytestmark = [PDNS_REQUIRED, components.NGINX]

SVC_NS = ["ns1.svc.localhost.", "ns2.svc.localhost."]  # svc serve's nameservers (SVC_NAMESERVERS' default)
JSON = {"accept": "application/json"}


@pytest.fixture
async def public(tmp_path: Path) -> AsyncIterator[PublicDns]:
    async with running_public_dns(tmp_path / "public") as world:
        yield world


@pytest.fixture
async def server(tmp_path: Path, public: PublicDns) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path, SVC_TRUST_OWN_ZONES="false", SVC_DNS_RESOLVER=public.address,
                         SVC_HOSTNAME_VERIFY_SECONDS="0.5") as running:
        yield running


class Person:
    def __init__(self, http: httpx.AsyncClient, server: Server, org: str) -> None:
        self.http, self.server, self.org = http, server, org

    @classmethod
    async def signed_up(cls, server: Server, subject: str, org: str, page: str) -> Person:
        r = httpx.post(f"{server.api}/v1/auth/dev/login", json={"subject": subject}, timeout=10)
        assert r.status_code == 200, r.text
        # Idle connections dropped before the server's keep-alive timeout could close one under a POST.
        http = httpx.AsyncClient(base_url=server.api, headers={"authorization": f"Bearer {r.json()['token']}"},
                                 timeout=20, limits=httpx.Limits(keepalive_expiry=1))
        person = cls(http, server, org)
        assert (await http.post("/v1/orgs", json={"slug": org})).status_code == 201
        assert (await http.post(f"/v1/orgs/{org}/projects", json={"name": "web"})).status_code == 201
        deployed = await http.post(f"/v1/orgs/{org}/projects/web/deployments", content=site(
            {"assets/index.html": page.encode()}), headers={"content-type": "application/gzip"})
        assert deployed.status_code == 201, deployed.text
        return person

    @property
    def hostnames(self) -> str:
        return f"/v1/orgs/{self.org}/projects/web/hostnames"

    @property
    def zones(self) -> str:
        return f"/v1/orgs/{self.org}/dns/zones"

    async def host(self, name: str) -> dict[str, Any] | None:
        listed = (await self.http.get(self.hostnames)).json()["hostnames"]
        return next((h for h in listed if h["host"] == name), None)

    async def notifications(self) -> list[dict[str, Any]]:
        return list((await self.http.get(f"/v1/orgs/{self.org}/notifications")).json()["notifications"])


async def _edge(server: Server, host: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.get(f"http://127.0.0.1:{server.edge_port}/", headers={"host": host, **JSON})


async def _served(server: Server, host: str, page: str) -> None:
    async def check() -> bool:
        return (await _edge(server, host)).text == page

    await until(check, f"{host} serving {page}")


async def _never_served(server: Server, host: str) -> None:
    answer = await _edge(server, host)
    assert answer.status_code == 404 and answer.json()["code"] == "unknown_hostname", answer.text


async def test_a_squatter_gets_nothing_and_the_real_owner_takes_over(server: Server, public: PublicDns) -> None:
    # The real owner's domain, hosted by their DNS host; the squatter's copy of it on svc.
    await public.host("bank.example.", {("bank.example.", "A"): ["192.0.2.10"]})
    eve = await Person.signed_up(server, "eve", "squat", "<h1>eve's site</h1>")
    alice = await Person.signed_up(server, "alice", "bank", "<h1>the bank</h1>")

    # 1. The squat: a zone for bank.example on svc, and a name in it. svc checks the public DNS.
    assert (await eve.http.post(eve.zones, json={"name": "bank.example"})).status_code == 200

    async def checked_zone() -> Any:
        zone = (await eve.http.get(f"{eve.zones}/bank.example")).json()
        return zone if zone["delegationCheckedAt"] else None

    zone = await until(checked_zone, "the zone's delegation checked")
    assert zone["delegated"] is False
    assert zone["delegationSeen"] == f"the parent lists {', '.join(n.rstrip('.') for n in ELSEWHERE)}"
    added = await eve.http.post(eve.hostnames, json={"name": "www.bank.example"})
    assert added.status_code == 200 and added.json()["status"] == "pending_dns"

    async def said_why() -> Any:
        found = await eve.host("www.bank.example")
        return found["lastError"] if found and found["lastError"] else None

    why = await until(said_why, "the squatter's hostname checked")
    assert why.startswith("bank.example is not delegated to svc's nameservers yet: the parent lists "), why
    await _never_served(server, "www.bank.example")

    # 2. The TXT variant: svc's own zone answers the TXT, and svc never asks itself.
    value = added.json()["verification"]["value"]
    assert (await eve.http.put(f"{eve.zones}/bank.example/rrsets/_svc-verify.www/TXT",
                               json={"records": [value]})).status_code == 200
    checked = (await eve.http.post(f"{eve.hostnames}/www.bank.example/verify")).json()
    assert checked["status"] == "pending_dns", checked
    await _never_served(server, "www.bank.example")

    # 3. The real owner: refused at first, with the record that proves the name is theirs...
    refused = await alice.http.post(alice.hostnames, json={"name": "www.bank.example"})
    assert refused.status_code == 409 and refused.json()["code"] == "hostname_taken"
    claim = refused.json()["details"]["claim"]
    assert claim["name"] == "_svc-verify.www.bank.example" and claim["value"] != value
    # ...which they publish where bank.example's DNS is hosted: the name is theirs, at once.
    await public.host("bank.example.", {("bank.example.", "A"): ["192.0.2.10"],
                                        ("_svc-verify.www.bank.example.", "TXT"): [f'"{claim["value"]}"']})
    took = await alice.http.post(alice.hostnames, json={"name": "www.bank.example"})
    assert took.status_code == 200 and took.json()["status"] == "active", took.text
    await _served(server, "www.bank.example", "<h1>the bank</h1>")
    assert await eve.host("www.bank.example") is None
    assert any(n["kind"] == "hostname.released" and "www.bank.example" in n["message"]
               for n in await eve.notifications())

    # 4. The zone: taken over the same way (its own claim), then delegated to svc by the owner.
    refused = await alice.http.post(alice.zones, json={"name": "bank.example"})
    assert refused.status_code == 409 and refused.json()["code"] == "zone_taken"
    zone_claim = refused.json()["details"]["claim"]
    assert zone_claim["name"] == "_svc-verify.bank.example"
    await public.host("bank.example.", {("bank.example.", "A"): ["192.0.2.10"],
                                        ("_svc-verify.bank.example.", "TXT"): [f'"{zone_claim["value"]}"']})
    took = await alice.http.post(alice.zones, json={"name": "bank.example"})
    assert took.status_code == 200, took.text
    assert (await eve.http.get(f"{eve.zones}/bank.example")).status_code == 404
    assert any(n["kind"] == "dns.zone.released" for n in await eve.notifications())
    await public.delegate("bank.example.", SVC_NS)
    delegated = (await alice.http.post(f"{alice.zones}/bank.example/delegation")).json()
    assert delegated["delegated"] is True and delegated["delegationSeen"] is None
    # Delegated: a name in the zone is the org's at once.
    api = await alice.http.post(alice.hostnames, json={"name": "api.bank.example"})
    assert api.status_code == 200

    async def api_active() -> bool:
        found = await alice.host("api.bank.example")
        return bool(found and found["status"] == "active")

    await until(api_active, "api.bank.example proven by the delegated zone")
    await _served(server, "api.bank.example", "<h1>the bank</h1>")


async def test_a_pending_claim_reserves_nothing_against_the_proven_owner(server: Server, public: PublicDns) -> None:
    eve = await Person.signed_up(server, "eve2", "squat2", "<h1>eve's site</h1>")
    alice = await Person.signed_up(server, "alice2", "corp", "<h1>the corp</h1>")
    # Added before any zone exists: pending, nothing proves it.
    assert (await eve.http.post(eve.hostnames, json={"name": "www.corp.example"})).status_code == 200
    # The real owner delegates corp.example to svc and holds the zone here.
    await public.delegate("corp.example.", SVC_NS)
    assert (await alice.http.post(alice.zones, json={"name": "corp.example"})).status_code == 200
    checked = (await alice.http.post(f"{alice.zones}/corp.example/delegation")).json()
    assert checked["delegated"] is True
    # Their delegated zone proves the name: the pending claim of another org is taken over.
    took = await alice.http.post(alice.hostnames, json={"name": "www.corp.example"})
    assert took.status_code == 200 and took.json()["status"] == "active", took.text
    await _served(server, "www.corp.example", "<h1>the corp</h1>")
    assert await eve.host("www.corp.example") is None
    # Proven so, it is not the squatter's to take back: even with a TXT of theirs published.
    again = await eve.http.post(eve.hostnames, json={"name": "www.corp.example"})
    assert again.status_code == 409 and "claim" not in again.json()["details"]
