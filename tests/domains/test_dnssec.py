"""DNSSEC on a domain bought through svc: svc is the registrar's client there, so it sends the DS
to the registrar itself (the fake registrar keeps them, as DNSimple's DS records API does) and
shows when the parent serves it; turning DNSSEC off removes the DS at the registrar first, and the
zone stays signed until then. Driven over svc's API, with the registrar over HTTP; "the parent
serves it" is the trusted local run's (SVC_TRUST_OWN_ZONES: no public DNS to ask)."""

from __future__ import annotations

import dns.rdatatype
from sqlalchemy import func, select

from svc.adapters.registrar import FakeRegistrar
from svc.models import Job, JobStatus
from tests.domains.conftest import CONTACT
from tests.support.api import Svc, assert_error
from tests.support.pdns import Pdns
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
