"""DNSSEC on a domain bought through svc: svc is the registrar's client there, so it sends the DS
to the registrar itself (the fake registrar keeps them, as DNSimple's DS records API does) and
shows when the parent serves it; turning DNSSEC off removes the DS at the registrar first, and the
zone stays signed until then. Driven over svc's API, with the registrar over HTTP; "the parent
serves it" is the trusted local run's (SVC_TRUST_OWN_ZONES: no public DNS to ask)."""

from __future__ import annotations

from pathlib import Path

import dns.rdatatype
from sqlalchemy import func, select

from svc.adapters.nameserver.port import RRsetData
from svc.adapters.nameserver.settings import NameserverSettings
from svc.adapters.registrar import FakeRegistrar
from svc.models import Job, JobStatus
from svc.settings import Settings
from tests.domains.conftest import CONTACT, domains_svc
from tests.support.api import Svc, assert_error
from tests.support.config import configured
from tests.support.pdns import Pdns
from tests.support.public_dns import running_public_dns
from tests.support.team import make_team
from tests.support.wait import until

D = "/v1/orgs/acme/domains"
Z = "/v1/orgs/acme/dns/zones"
NAME = "signed-shop.com"


async def _signed(pdns: Pdns, name: str) -> bool:
    """Whether svc's nameserver signs the zone's answers (an RRSIG beside the SOA, DO bit set)."""
    r = await pdns.query(name, "SOA", want_dnssec=True)
    return any(rrset.rdtype == dns.rdatatype.RRSIG for rrset in r.answer)


async def _syncs_done(svc: Svc) -> bool:
    """No sync of a zone waits or runs: the nameserver is what the store asks of it now."""
    async with svc.ctx.db.transaction(write=False) as s:
        waiting = await s.scalar(select(func.count()).select_from(Job).where(
            Job.kind == "dns.sync", Job.status.in_([JobStatus.queued, JobStatus.running])))
    return waiting == 0


async def test_the_ds_goes_to_the_registrar_and_leaves_it_first(dsvc: Svc, registrar: FakeRegistrar,
                                                                pdns: Pdns) -> None:
    t = await make_team(dsvc)
    alice = t.alice.client
    assert (await alice.post(D, json={"name": NAME, "contact": CONTACT})).status_code == 201
    zone = f"{Z}/{NAME}"
    assert (await alice.get(zone)).json()["registrarDs"] == "none"

    on = await alice.post(f"{zone}/dnssec", json={"enabled": True})
    assert on.status_code == 200 and on.json()["dnssec"] == "signing" and on.json()["registrarDs"] == "sending"

    async def published() -> dict | None:
        body = (await alice.get(zone)).json()
        return body if body["registrarDs"] == "published" else None
    shown = await until(published, what="the DS sent to the registrar and served by the parent")
    # The parent serves the nameserver's own DS: the registrar holds exactly those, nobody copied them.
    assert shown["dnssec"] == "active" and shown["dsRecords"] and shown["ds"] == shown["dsRecords"]
    assert registrar.ds(NAME) == [d.upper() for d in shown["dsRecords"]]  # its digest in upper case
    assert await _signed(pdns, f"{NAME}.")
    # svc feeds this DS itself: recording one by hand is refused, in words.
    refused = assert_error(await alice.put(f"{zone}/dnssec/ds", json={"ds": []}), 409, "ds_managed")
    assert "sends its DS to the registrar itself" in refused["message"]

    # Off: the DS leaves the registrar first. While the registrar does not answer, the zone stays signed.
    registrar.fail("ds", "timeout")
    off = await alice.post(f"{zone}/dnssec", json={"enabled": False})
    assert off.status_code == 200 and off.json()["dnssec"] == "off" and off.json()["registrarDs"] == "removing"
    await until(lambda: registrar.holding() == 1, what="the DS removal at the registrar")
    await until(lambda: _syncs_done(dsvc), what="the zone's sync after the switch")
    assert await _signed(pdns, f"{NAME}.") and registrar.ds(NAME), "still signed while the parent has the DS"
    registrar.release()  # the held call fails; the job tries again

    async def unsigned() -> bool:
        return not await _signed(pdns, f"{NAME}.")
    await until(unsigned, what="the zone unsigned once the DS left the registrar")
    assert registrar.ds(NAME) == []
    assert (await alice.get(zone)).json()["registrarDs"] == "none"
    # The registrar's DS calls: set (the DS), the removal held and let go, the removal again.
    assert [c["status"] for c in registrar.calls("ds")][-2:] == [503, 200]


async def test_the_parent_decides_when_the_public_dns_is_asked(dns_settings: Settings, pdns: Pdns,
                                                              registrar: FakeRegistrar, tmp_path: Path) -> None:
    """Not trusted (a shared server): `published` only once the parent serves the DS, and, turned
    off, the zone stays signed while the parent still serves it: gone from the registrar is not enough."""
    async with running_public_dns(tmp_path / "public") as public:
        settings = configured(dns_settings, trust_own_zones=False, dns_resolver=public.address)
        async with domains_svc(settings, pdns, registrar, registrar_timeout=2.0) as svc:
            name = "parent-shop.example"
            registrar.set_price(name, price_cents=900, renewal_cents=900, available=True)
            await public.delegate(f"{name}.", list(settings.settings_of(NameserverSettings).nameserver_names))
            t = await make_team(svc)
            alice = t.alice.client
            assert (await alice.post(D, json={"name": name, "contact": CONTACT})).status_code == 201
            zone = f"{Z}/{name}"
            assert (await alice.post(f"{zone}/dnssec", json={"enabled": True})).status_code == 200

            async def state(wanted: str) -> dict | None:
                body = (await alice.get(zone)).json()
                return body if body["registrarDs"] == wanted else None
            sent = await until(lambda: state("sent"), what="the DS at the registrar")
            assert sent["dnssec"] == "ds_pending" and registrar.ds(name)
            # The registry publishes it in the parent; "Check now" (any member) sees it.
            ds = RRsetData(name=f"{name}.", type="DS", ttl=60, records=tuple(sent["ds"]))
            await public.pdns.nameserver.apply("example.", replace=[ds], delete=[])
            checked = await t.bob.client.post(f"{zone}/delegation")
            assert checked.status_code == 200 and checked.json()["registrarDs"] == "published"
            assert checked.json()["dnssec"] == "active"

            assert (await alice.post(f"{zone}/dnssec", json={"enabled": False})).status_code == 200
            await until(lambda: state("withdrawn"), what="the DS removed at the registrar")
            assert registrar.ds(name) == []
            # The parent still serves the old DS: the zone stays signed, whatever is checked.
            assert (await t.bob.client.post(f"{zone}/delegation")).json()["registrarDs"] == "withdrawn"
            await until(lambda: _syncs_done(svc), what="the zone's syncs")
            assert await _signed(pdns, f"{name}.")
            # The parent drops it: now, and only now, the zone is unsigned.
            await public.pdns.nameserver.apply("example.", replace=[], delete=[(f"{name}.", "DS")])
            assert (await t.bob.client.post(f"{zone}/delegation")).json()["registrarDs"] == "none"

            async def unsigned() -> bool:
                return not await _signed(pdns, f"{name}.")
            await until(unsigned, what="the zone unsigned once the parent serves no DS")
