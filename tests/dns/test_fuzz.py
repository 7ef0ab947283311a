"""Fuzz the rrset PUT (hypothesis): no server error, every refusal the Error envelope, and nothing
invalid ever reaches the nameserver: after the run PowerDNS's own zone holds exactly what svc
stored (a record PowerDNS refused would leave its change out), and its zone file parses."""

from __future__ import annotations

import asyncio
from typing import Any

import dns.zone
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from svc.domains.dns import jobs
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc
from tests.support.pdns import Pdns

TYPES = ["A", "AAAA", "MX", "SRV", "CAA", "CNAME", "TXT", "NS", "SOA", "a", "TLSA", "", "*"]
NAMES = ["@", "www", "*", "_svc-verify", "a.b", "-x", "a..b", "ü", "www.example.com.", "x.other.org.", " ", "%2e"]
RECORD_PIECES = ["192.0.2.1", "2001:db8::1", "10 mail", "0 issue letsencrypt.org", '"quoted"', "10 60 5060 sip",
                 "www", ".", "mail.example.net.", "999.1.1.1", '"', "\\", "\n", "\x00", "é", "(", ";", "x" * 300]

record = st.one_of(st.text(max_size=80), st.lists(st.sampled_from(RECORD_PIECES), min_size=1, max_size=3)
                   .map(" ".join))
body = st.one_of(
    st.fixed_dictionaries({"records": st.lists(record, max_size=4)},
                          optional={"ttl": st.one_of(st.integers(-10, 100_000), st.text(max_size=3), st.none(),
                                                     st.booleans(), st.floats(allow_nan=False, allow_infinity=False))}),
    st.dictionaries(st.text(max_size=8), st.one_of(st.none(), st.integers(), st.text(max_size=8)), max_size=3),
    st.lists(st.integers(), max_size=2),
)


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
async def test_rrset_put_never_errors(dns_svc: Svc, pdns: Pdns) -> None:
    svc = dns_svc
    alice = await svc.login("alice")
    assert (await alice.client.post("/v1/orgs", json={"slug": "acme"})).status_code == 201
    assert (await alice.client.post("/v1/orgs/acme/dns/zones", json={"name": "example.com"})).status_code == 200
    loop = asyncio.get_running_loop()
    seen: list[int] = []

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @example(name="www", rtype="A", payload={"records": ["192.0.2.1"]})
    @example(name="@", rtype="TXT", payload={"ttl": 60, "records": ["x" * 300, '"a" "b"']})
    @example(name="www", rtype="CNAME", payload={"records": ["example.net."]})
    @given(name=st.one_of(st.sampled_from(NAMES), st.text(min_size=1, max_size=20)),
           rtype=st.sampled_from(TYPES), payload=body)
    def one(name: str, rtype: str, payload: Any) -> None:
        future = asyncio.run_coroutine_threadsafe(_put(alice.client, name, rtype, payload), loop)
        seen.append(future.result(timeout=30))

    await asyncio.to_thread(one)
    for _ in range(400):
        if await _idle(svc):
            break
        await asyncio.sleep(0.05)
    assert all(status < 500 for status in seen)
    assert any(status == 200 for status in seen) and any(status == 400 for status in seen)
    async with unit_of_work(svc.ctx, Tx.READ) as uow:
        want = await jobs.desired(uow.session, "example.com.")
    assert want is not None and ("example.com.", "TXT") in want.rrsets
    have = await pdns.nameserver.zone("example.com.")
    assert have is not None
    assert jobs.differences(want, have) == ([], []), "PowerDNS serves exactly what svc stored"
    exported = await pdns.nameserver.export("example.com.")
    assert exported is not None
    parsed = dns.zone.from_text(exported, origin="example.com.", relativize=False, check_origin=True)
    assert len(list(parsed.iterate_rdatasets())) == len(have.rrsets)


async def _put(client: Any, name: str, rtype: str, payload: Any) -> int:
    from urllib.parse import quote

    url = f"/v1/orgs/acme/dns/zones/example.com/rrsets/{quote(name, safe='@*')}/{quote(rtype, safe='')}"
    r = await client.put(url, json=payload)
    assert r.status_code < 500, (name, rtype, payload, r.text)
    if r.status_code >= 400:
        assert set(r.json()) == {"code", "message", "details"}
    return int(r.status_code)


async def _idle(svc: Any) -> bool:
    from sqlalchemy import select

    from svc.models import Job, JobStatus
    async with svc.ctx.db.transaction(write=False) as s:
        failed = (await s.scalars(select(Job.last_error).where(Job.kind == "dns.sync",
                                                                Job.last_error.is_not(None)))).all()
        assert not failed, failed
        busy = (await s.scalars(select(Job.id).where(Job.kind == "dns.sync", Job.status.in_(
            [JobStatus.queued, JobStatus.running])))).first()
    return busy is None
