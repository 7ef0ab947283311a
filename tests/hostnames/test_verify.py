"""Ownership, each of the three proofs, against the real PowerDNS (what the check resolves is what
pdns serves): the org's own zone (with the CNAME svc links there), the TXT record, the CNAME to the
fallback origin; the sentences lastError says when nothing proves it; the background cycle."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select

from svc.adapters.resolver.dns import DnsResolver
from svc.domains.hostnames import service, verify
from svc.models import Project
from svc.uow import Tx, unit_of_work
from tests.hostnames.conftest import ORIGIN, Team, audit, team, until
from tests.support.api import Svc, assert_error
from tests.support.pdns import PDNS_REQUIRED, Pdns, free_dns_port

pytestmark = PDNS_REQUIRED

H = "/v1/orgs/acme/projects/web/hostnames"
ACME_ZONES = "/v1/orgs/acme/dns/zones"
OTHER_ZONES = "/v1/orgs/other/dns/zones"


async def _hostname(client: httpx.AsyncClient, host: str) -> dict[str, Any]:
    rows = (await client.get(H)).json()["hostnames"]
    return next(h for h in rows if h["host"] == host)


async def _served(pdns: Pdns, name: str, rtype: str, want: list[str]) -> None:
    async def check() -> bool:
        return await pdns.answer(name, rtype) == want

    await until(check, f"{name} {rtype} answered as {want}")


async def _other_zone(t: Team, pdns: Pdns) -> None:
    """example.org belongs to another org: its records are the outside world's DNS here."""
    assert (await t.eve.client.post(OTHER_ZONES, json={"name": "example.org"})).status_code == 200

    async def served() -> bool:
        return await pdns.rcode("example.org.", "SOA") == "NOERROR"

    await until(served, "example.org served")


async def _put(t: Team, name: str, rtype: str, records: list[str]) -> None:
    r = await t.eve.client.put(f"{OTHER_ZONES}/example.org/rrsets/{name}/{rtype}", json={"records": records})
    assert r.status_code == 200, r.text


async def test_own_zone_proves_and_links(hsvc: Svc, pdns: Pdns) -> None:
    t = await team(hsvc)
    assert (await t.alice.client.post(ACME_ZONES, json={"name": "example.com"})).status_code == 200
    added = (await t.bob.client.post(H, json={"name": "www.example.com"})).json()
    assert added["status"] == "pending_dns"

    # The check enqueued with the add proves it (no lookup: svc serves the org's zone).
    async def active() -> bool:
        return bool((await _hostname(t.vic.client, "www.example.com"))["status"] == "active")

    await until(active, "www.example.com active")
    assert (await _hostname(t.vic.client, "www.example.com"))["lastError"] is None
    # svc linked the name to the edge in the zone: a CNAME to the fallback origin, managed.
    await _served(pdns, "www.example.com.", "CNAME", [ORIGIN])
    zone = (await t.vic.client.get(f"{ACME_ZONES}/example.com")).json()
    link = next(s for s in zone["rrsets"] if s["name"] == "www")
    assert link == {"name": "www", "type": "CNAME", "ttl": 3600, "records": [ORIGIN], "managed_by": "project"}
    assert_error(await t.bob.client.put(f"{ACME_ZONES}/example.com/rrsets/www/CNAME",
                                        json={"records": ["elsewhere.example.net."]}), 409, "managed_rrset")
    assert_error(await t.bob.client.delete(f"{ACME_ZONES}/example.com/rrsets/www/CNAME"), 409, "managed_rrset")

    # A name that already holds the owner's records keeps them: no link, still proven by the zone,
    # once the zone's delegation check (after its first sync) has seen the public DNS delegate it.
    async def delegated() -> bool:
        return bool((await t.vic.client.get(f"{ACME_ZONES}/example.com")).json()["delegated"])

    await until(delegated, "example.com delegated")
    r = await t.bob.client.put(f"{ACME_ZONES}/example.com/rrsets/shop/A", json={"records": ["192.0.2.7"]})
    assert r.status_code == 200
    assert (await t.bob.client.post(H, json={"name": "shop.example.com"})).status_code == 200
    # The apex cannot hold a CNAME: nothing is created there.
    assert (await t.bob.client.post(H, json={"name": "example.com"})).status_code == 200
    for host in ("shop.example.com", "example.com"):
        proven = await t.bob.client.post(f"{H}/{host}/verify")
        assert proven.json()["status"] == "active" and proven.json()["lastError"] is None
    await _served(pdns, "shop.example.com.", "A", ["192.0.2.7"])
    zone = (await t.vic.client.get(f"{ACME_ZONES}/example.com")).json()
    assert sorted((s["name"], s["type"], s["managed_by"]) for s in zone["rrsets"]) == [
        ("@", "NS", "system"), ("@", "SOA", "system"), ("shop", "A", None), ("www", "CNAME", "project")]

    # Removing the hostname removes its link (and only its link).
    assert (await t.bob.client.delete(f"{H}/www.example.com")).status_code == 204
    assert (await t.bob.client.delete(f"{H}/shop.example.com")).status_code == 204
    await _served(pdns, "www.example.com.", "CNAME", [])
    assert await pdns.rcode("www.example.com.", "CNAME") == "NXDOMAIN"
    await _served(pdns, "shop.example.com.", "A", ["192.0.2.7"])
    data = {target: d for action, target, d in await audit(hsvc) if action == "hostname.add"}
    assert data["www.example.com"]["dnsRecord"] == "created" and data["shop.example.com"]["dnsRecord"] == "occupied"
    assert data["example.com"]["dnsRecord"] == "apex"
    removed = {target: d for action, target, d in await audit(hsvc) if action == "hostname.delete"}
    assert removed["www.example.com"]["dnsRecordRemoved"] is True
    assert removed["shop.example.com"]["dnsRecordRemoved"] is False


async def test_zone_of_another_org_proves_nothing(hsvc: Svc, pdns: Pdns) -> None:
    t = await team(hsvc)
    await _other_zone(t, pdns)
    added = (await t.bob.client.post(H, json={"name": "www.example.org"})).json()
    got = (await t.bob.client.post(f"{H}/www.example.org/verify")).json()
    assert got["status"] == "pending_dns"
    # Nothing in example.org for this name yet: both lookups say so, in one sentence.
    assert got["lastError"] == ("TXT _svc-verify.www.example.org has no record, and www.example.org does not "
                                "exist (NXDOMAIN)")
    # No record was created in the other org's zone.
    zone = (await t.eve.client.get(f"{OTHER_ZONES}/example.org")).json()
    assert [s["type"] for s in zone["rrsets"]] == ["NS", "SOA"]
    assert added["verification"]["value"] not in str(await audit(hsvc))


async def test_txt_record_proves(hsvc: Svc, pdns: Pdns) -> None:
    t = await team(hsvc)
    await _other_zone(t, pdns)
    value = (await t.bob.client.post(H, json={"name": "www.example.org"})).json()["verification"]["value"]

    await _put(t, "www", "A", ["192.0.2.10"])
    await _put(t, "_svc-verify.www", "TXT", ["x"])
    await _served(pdns, "_svc-verify.www.example.org.", "TXT", ['"x"'])
    got = (await t.bob.client.post(f"{H}/www.example.org/verify")).json()
    assert got["status"] == "pending_dns"
    assert got["lastError"] == ('TXT _svc-verify.www.example.org holds "x", expected the value shown, and '
                                f"CNAME www.example.org has no record, expected one pointing to {ORIGIN}")

    await _put(t, "_svc-verify.www", "TXT", ["x", value])
    await _served(pdns, "_svc-verify.www.example.org.", "TXT", sorted(['"x"', f'"{value}"']))
    got = (await t.bob.client.post(f"{H}/www.example.org/verify")).json()
    assert got["status"] == "active" and got["lastError"] is None
    # Active stays active: the record may go, nothing demotes the hostname.
    r = await t.eve.client.delete(f"{OTHER_ZONES}/example.org/rrsets/_svc-verify.www/TXT")
    assert r.status_code == 204
    await _served(pdns, "_svc-verify.www.example.org.", "TXT", [])
    assert (await t.bob.client.post(f"{H}/www.example.org/verify")).json()["status"] == "active"
    assert (await _hostname(t.vic.client, "www.example.org"))["status"] == "active"


async def test_cname_to_the_fallback_origin_proves(hsvc: Svc, pdns: Pdns) -> None:
    t = await team(hsvc)
    await _other_zone(t, pdns)
    assert (await t.bob.client.post(H, json={"name": "app.example.org"})).status_code == 200
    await _put(t, "app", "CNAME", ["x.example.net."])
    await _served(pdns, "app.example.org.", "CNAME", ["x.example.net."])
    got = (await t.bob.client.post(f"{H}/app.example.org/verify")).json()
    assert got["lastError"] == ("TXT _svc-verify.app.example.org has no record, and CNAME app.example.org points "
                                f"to x.example.net., expected {ORIGIN}")
    await _put(t, "app", "CNAME", [ORIGIN])
    await _served(pdns, "app.example.org.", "CNAME", [ORIGIN])
    got = (await t.bob.client.post(f"{H}/app.example.org/verify")).json()
    assert got["status"] == "active" and got["lastError"] is None


async def test_unanswered_lookups_in_words(hsvc: Svc, pdns: Pdns) -> None:
    t = await team(hsvc)
    # A name outside every zone pdns serves: an authoritative server refuses it.
    assert (await t.bob.client.post(H, json={"name": "www.elsewhere.net"})).status_code == 200
    got = (await t.bob.client.post(f"{H}/www.elsewhere.net/verify")).json()
    assert got["lastError"] == (f"the resolver at {pdns.host}:{pdns.port} could not answer for "
                                "_svc-verify.www.elsewhere.net nor www.elsewhere.net (it refused: no nameserver it "
                                "asks serves the domain, or the domain is not delegated yet)")
    # A resolver that does not answer at all (nothing listens there).
    silent = DnsResolver.at("127.0.0.1", free_dns_port(), lifetime=0.3)
    check = await verify.check_records(silent, "www.elsewhere.net", "value", ORIGIN)
    assert not check.proven
    assert check.error == f"{silent.description} did not answer"
    assert silent.description.startswith("the resolver at 127.0.0.1:")


async def test_cycle_turns_pending_names_active(hsvc: Svc, pdns: Pdns) -> None:
    t = await team(hsvc)
    await _other_zone(t, pdns)
    values = {}
    for host in ("a.example.org", "b.example.org", "c.example.org"):
        values[host] = (await t.bob.client.post(H, json={"name": host})).json()["verification"]["value"]
    await _put(t, "_svc-verify.a", "TXT", [values["a.example.org"]])
    await _put(t, "b", "CNAME", [ORIGIN])
    await _served(pdns, "b.example.org.", "CNAME", [ORIGIN])
    await _served(pdns, "_svc-verify.a.example.org.", "TXT", [f'"{values["a.example.org"]}"'])

    # One run of the periodic cycle (the job's own function): every pending name is checked.
    async with unit_of_work(hsvc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await service.verify_pending(uow) == 2
    rows = {h["host"]: h for h in (await t.vic.client.get(H)).json()["hostnames"]}
    assert rows["a.example.org"]["status"] == rows["b.example.org"]["status"] == "active"
    assert rows["c.example.org"]["status"] == "pending_dns"
    assert rows["c.example.org"]["lastError"] == ("TXT _svc-verify.c.example.org has no record, and c.example.org "
                                                  "does not exist (NXDOMAIN)")
    async with unit_of_work(hsvc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await service.verify_pending(uow) == 0


async def test_project_teardown_releases_its_links(hsvc: Svc, pdns: Pdns) -> None:
    t = await team(hsvc)
    assert (await t.alice.client.post(ACME_ZONES, json={"name": "example.com"})).status_code == 200
    assert (await t.bob.client.post(H, json={"name": "www.example.com"})).status_code == 200
    await _served(pdns, "www.example.com.", "CNAME", [ORIGIN])
    async with hsvc.ctx.db.transaction(write=False) as s:
        row = (await s.execute(select(Project.id, Project.org_id).where(Project.name == "web"))).one()
    # What the teardown calls: the project's links go (twice is fine), the owner's records stay.
    for removed in (1, 0):
        async with unit_of_work(hsvc.ctx, Tx.WRITE) as uow:
            assert await service.release_project(uow, row.org_id, row.id) == removed
    await _served(pdns, "www.example.com.", "CNAME", [])


async def test_pending_host_page_for_the_edge(hsvc: Svc) -> None:
    t = await team(hsvc)
    value = (await t.bob.client.post(H, json={"name": "www.elsewhere.net"})).json()["verification"]["value"]
    await t.bob.client.post(f"{H}/www.elsewhere.net/verify")
    page = await hsvc.anon.get("/v1/edge/pending-host", headers={"x-svc-host": "WWW.elsewhere.net",
                                                                 "accept": "text/html"})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "_svc-verify.www.elsewhere.net" in page.text and ORIGIN in page.text and "Last check:" in page.text
    assert value not in page.text
    assert page.headers["cache-control"] == "no-store"
    as_json = await hsvc.anon.get("/v1/edge/pending-host", headers={"x-svc-host": "www.elsewhere.net",
                                                                    "accept": "application/json"})
    assert_error(as_json, 404, "unknown_hostname")
    # Not pending (unknown, or the default hostname): the plain unknown-host answer.
    for host in ("nobody.example.net", "web-acme.localhost"):
        r = await hsvc.anon.get("/v1/edge/pending-host", headers={"x-svc-host": host, "accept": "application/json"})
        assert_error(r, 404, "unknown_hostname")
    assert_error(await hsvc.anon.get("/v1/edge/pending-host", headers={"accept": "application/json"}), 400)
