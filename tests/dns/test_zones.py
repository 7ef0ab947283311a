"""DNS zones over the API (both stores), converged to a real PowerDNS by the dns.sync jobs and the
dns.reconcile cycle that svc's own worker runs; what the nameserver answers is asked over DNS with
dnspython (tests/support/pdns.py)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta

import dns.rdatatype
from sqlalchemy import select, update

from svc.adapters.nameserver.port import RRsetData
from svc.domains.dns.kinds import DnsJob
from svc.kit.clock import utcnow
from svc.models import AuditEvent, Cycle, Job, JobStatus, Zone
from tests.support.api import Svc, assert_error
from tests.support.pdns import NAMESERVERS, Pdns
from tests.support.team import Team, make_team
from tests.support.wait import WAIT_SECONDS

Z = "/v1/orgs/acme/dns/zones"
ZONE = f"{Z}/example.com"
ZONE_FIELDS = {"name", "dnssec", "ds", "registrarDs", "nameservers", "delegated", "delegationCheckedAt",
               "delegationSeen", "createdAt"}


async def _team(svc: Svc) -> Team:
    return await make_team(svc, other_org=True)


async def _until(check: Callable[[], Awaitable[bool]], what: str, seconds: float = WAIT_SECONDS) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.025)


async def _answers(pdns: Pdns, name: str, rtype: str, want: list[str]) -> None:
    async def check() -> bool:
        return await pdns.answer(name, rtype) == sorted(want)
    await _until(check, f"{name} {rtype} answered as {want}")


async def _settled(svc: Svc) -> None:
    """No dns.sync job queued or running."""
    async def idle() -> bool:
        async with svc.ctx.db.transaction(write=False) as s:
            busy = (await s.scalars(select(Job.id).where(Job.kind == DnsJob.sync, Job.status.in_(
                [JobStatus.queued, JobStatus.running])))).first()
        return busy is None
    await _until(idle, "dns.sync jobs to finish")


async def _reconciles_ran(svc: Svc) -> list[Job]:
    async with svc.ctx.db.transaction(write=False) as s:
        return list((await s.scalars(select(Job).where(
            Job.kind == DnsJob.reconcile, Job.status.in_([JobStatus.done, JobStatus.failed])))).all())


async def _reconcile_cycle(svc: Svc) -> None:
    """The registered dns.reconcile cycle comes due (as if its interval had passed) and svc's own
    worker runs it; returns once that run has finished, and it succeeded."""
    async def cycle_known() -> bool:  # made by the worker's first round
        async with svc.ctx.db.transaction(write=False) as s:
            return await s.get(Cycle, DnsJob.reconcile) is not None
    await _until(cycle_known, "the dns.reconcile cycle to be registered")
    before = {j.id for j in await _reconciles_ran(svc)}
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Cycle).where(Cycle.name == DnsJob.reconcile)
                        .values(next_run_at=utcnow() - timedelta(seconds=1)))

    async def ran() -> bool:
        return any(j.id not in before for j in await _reconciles_ran(svc))
    await _until(ran, "the reconcile cycle to run")
    assert all(j.status == JobStatus.done for j in await _reconciles_ran(svc) if j.id not in before)


async def _actions(svc: Svc) -> list[str]:
    async with svc.ctx.db.transaction(write=False) as s:
        return list((await s.scalars(select(AuditEvent.action).where(AuditEvent.action.like("dns.%"))
                                     .order_by(AuditEvent.at))).all())


async def test_create_idempotent_and_detail(dns_svc: Svc, pdns: Pdns) -> None:
    team = await _team(dns_svc)
    r = await team.alice.client.post(Z, json={"name": "Example.COM"})
    assert r.status_code == 200, r.text
    detail = r.json()
    assert set(detail) == ZONE_FIELDS | {"rrsets", "dsRecords"}
    assert detail["name"] == "example.com." and detail["dnssec"] == "off" and detail["ds"] == []
    # A local run's trust: the zone counts as delegated at once (without it, the public DNS is asked).
    assert detail["delegated"] is True and detail["delegationSeen"] is None and detail["nameservers"] == NAMESERVERS
    assert detail["createdAt"].endswith("Z")
    by_type = {(s["name"], s["type"]): s for s in detail["rrsets"]}
    assert set(by_type) == {("@", "SOA"), ("@", "NS")}
    assert by_type[("@", "NS")] == {"name": "@", "type": "NS", "ttl": 3600, "managed_by": "system",
                                    "records": NAMESERVERS}
    assert by_type[("@", "SOA")]["managed_by"] == "system"
    await _answers(pdns, "example.com.", "NS", NAMESERVERS)

    again = await team.alice.client.post(Z, json={"name": "example.com."})
    assert again.status_code == 200 and again.json() == detail
    assert await _actions(dns_svc) == ["dns.zone.create"]

    listed = (await team.vic.client.get(Z)).json()
    assert listed == {"zones": [{k: detail[k] for k in ZONE_FIELDS}]}
    got = await team.vic.client.get(ZONE)
    assert got.status_code == 200
    shown = {(s["name"], s["type"]): s for s in got.json()["rrsets"]}
    assert shown[("@", "NS")] == by_type[("@", "NS")]
    # The SOA as the nameserver serves it: its serial (bumped on every change), not the stored 0.
    soa = shown[("@", "SOA")]
    assert by_type[("@", "SOA")]["records"][0].split()[2] == "0"
    assert soa["records"][0].split()[2] == str(await _serial(pdns)) != "0"
    assert soa == {**by_type[("@", "SOA")], "records": soa["records"]}
    # The unicode and trailing-dot spellings name the same zone.
    assert (await team.vic.client.get(f"{Z}/EXAMPLE.com.")).status_code == 200
    idn = await team.alice.client.post(Z, json={"name": "Bücher.example"})
    assert idn.json()["name"] == "xn--bcher-kva.example."
    assert (await team.vic.client.get(f"{Z}/bücher.example")).json()["name"] == "xn--bcher-kva.example."


async def test_roles_taken_and_overlap(dns_svc: Svc) -> None:
    team = await _team(dns_svc)
    assert_error(await team.bob.client.post(Z, json={"name": "example.com"}), 403, "forbidden")
    assert (await team.alice.client.post(Z, json={"name": "example.com"})).status_code == 200
    assert_error(await team.eve.client.get(ZONE), 404)
    assert_error(await team.eve.client.get("/v1/orgs/other/dns/zones/example.com"), 404)
    for name in ("example.com", "sub.example.com", "com.example.com"):
        body = assert_error(await team.eve.client.post("/v1/orgs/other/dns/zones", json={"name": name}), 409,
                            "zone_taken")
        assert "held by another org" in body["message"]
    # A parent of another org's zone is refused too; the same org may hold both.
    assert (await team.alice.client.post(Z, json={"name": "dev.example.com"})).status_code == 200
    assert (await team.eve.client.post("/v1/orgs/other/dns/zones", json={"name": "example.org"})).status_code == 200
    assert_error(await team.alice.client.post(Z, json={"name": "a.example.org"}), 409, "zone_taken")
    for bad in ("com", "1.2.3.4", "*.example.net", "a..b", "", "svc.test", "x.localhost", "ns1.svc.test"):
        body = assert_error(await team.alice.client.post(Z, json={"name": bad}), 400, "bad_request")
        assert body["details"]["errors"][0]["field"] == "name"
    assert_error(await team.alice.client.post(Z, json={"name": "ok.net", "extra": 1}), 400, "bad_request")


async def test_rrsets_put_delete_and_managed(dns_svc: Svc, pdns: Pdns) -> None:
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    bob, vic = team.bob.client, team.vic.client
    assert_error(await vic.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.1"]}), 403, "forbidden")

    r = await bob.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.1", "192.0.2.2"]})
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "www", "type": "A", "ttl": 3600, "records": ["192.0.2.1", "192.0.2.2"],
                        "managed_by": None}
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.1", "192.0.2.2"])
    # PUT replaces the whole set; the TTL stays unless given.
    r = await bob.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.9"]})
    assert r.json()["records"] == ["192.0.2.9"] and r.json()["ttl"] == 3600
    r = await bob.put(f"{ZONE}/rrsets/@/MX", json={"ttl": 300, "records": ["10 mail", "20 mx.other.net."]})
    assert r.json() == {"name": "@", "type": "MX", "ttl": 300, "managed_by": None,
                        "records": ["10 mail.example.com.", "20 mx.other.net."]}
    long = "v=DKIM1; p=" + "A" * 400
    r = await bob.put(f"{ZONE}/rrsets/sel._domainkey/TXT", json={"records": [long]})
    assert r.json()["records"] == ['"' + long[:255] + '" "' + long[255:] + '"']
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.9"])
    await _settled(dns_svc)
    mx = (await pdns.query("example.com.", "MX")).answer[0]
    assert mx.ttl == 300 and sorted(r.to_text() for r in mx) == ["10 mail.example.com.", "20 mx.other.net."]
    # The long TXT is served as two character-strings that join to the text written.
    txt = (await pdns.query("sel._domainkey.example.com.", "TXT")).answer[0]
    assert [b"".join(r.strings) for r in txt] == [long.encode()]
    assert [len(s) for r in txt for s in r.strings] == [255, 156]

    for path in ("@/SOA", "@/NS"):
        assert_error(await bob.put(f"{ZONE}/rrsets/{path}", json={"records": ["ns9.x.net."]}), 409, "managed_rrset")
        assert_error(await bob.delete(f"{ZONE}/rrsets/{path}"), 409, "managed_rrset")
    assert (await bob.put(f"{ZONE}/rrsets/sub/NS", json={"records": ["ns1.other.net."]})).status_code == 200

    assert (await bob.delete(f"{ZONE}/rrsets/www/A")).status_code == 204
    assert_error(await bob.delete(f"{ZONE}/rrsets/www/A"), 404)
    await _answers(pdns, "www.example.com.", "A", [])
    actions = await _actions(dns_svc)
    assert actions.count("dns.rrset.set") == 5 and actions.count("dns.rrset.delete") == 1


async def test_bad_rrsets_are_clear_400s_and_change_nothing(dns_svc: Svc) -> None:
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    bob = team.bob.client
    cases = [
        ("www/A", {"records": ["999.1.1.1"]}, "records.0"), ("www/A", {"records": []}, "records"),
        ("www/A", {"ttl": 30, "records": ["192.0.2.1"]}, "ttl"),
        ("www/A", {"ttl": "60", "records": ["1.2.3.4"]}, "ttl"),
        ("www/a", {"records": ["192.0.2.1"]}, "type"), ("www/TLSA", {"records": ["x"]}, "type"),
        ("_x/A", {"records": ["192.0.2.1"]}, "name"), ("a..b/A", {"records": ["192.0.2.1"]}, "name"),
        ("www.other.org./A", {"records": ["192.0.2.1"]}, "name"),
        ("@/CAA", {"records": ['0 bogus "x"']}, "records.0"), ("cn/CNAME", {"records": ["cn"]}, "records.0"),
        ("www/A", {"records": ["192.0.2.1"], "x": 1}, "x"), ("www/A", {"records": "192.0.2.1"}, "records"),
    ]
    for path, body, field in cases:
        err = assert_error(await bob.put(f"{ZONE}/rrsets/{path}", json=body), 400, "bad_request")
        assert err["details"]["errors"][0]["field"] == field, (path, err)
    rrsets = (await bob.get(ZONE)).json()["rrsets"]
    assert {(s["name"], s["type"]) for s in rrsets} == {("@", "SOA"), ("@", "NS")}
    assert await _actions(dns_svc) == ["dns.zone.create"]


async def test_cname_conflicts(dns_svc: Svc) -> None:
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    bob = team.bob.client
    assert_error(await bob.put(f"{ZONE}/rrsets/@/CNAME", json={"records": ["x.example.net."]}), 409, "cname_conflict")
    assert (await bob.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.1"]})).status_code == 200
    assert_error(await bob.put(f"{ZONE}/rrsets/www/CNAME", json={"records": ["x.example.net."]}), 409,
                 "cname_conflict")
    assert (await bob.put(f"{ZONE}/rrsets/blog/CNAME", json={"records": ["www"]})).status_code == 200
    assert_error(await bob.put(f"{ZONE}/rrsets/blog/TXT", json={"records": ["hi"]}), 409, "cname_conflict")
    # Replacing the CNAME itself is fine.
    r = await bob.put(f"{ZONE}/rrsets/blog/CNAME", json={"records": ["x.example.net."]})
    assert r.status_code == 200 and r.json()["records"] == ["x.example.net."]
    # Delegation: only glue below an NS.
    assert (await bob.put(f"{ZONE}/rrsets/sub/NS", json={"records": ["ns1.sub"]})).status_code == 200
    assert (await bob.put(f"{ZONE}/rrsets/ns1.sub/A", json={"records": ["192.0.2.53"]})).status_code == 200
    assert_error(await bob.put(f"{ZONE}/rrsets/sub/TXT", json={"records": ["x"]}), 400, "bad_request")
    assert_error(await bob.put(f"{ZONE}/rrsets/x.sub/TXT", json={"records": ["x"]}), 400, "bad_request")


async def _signed(pdns: Pdns, name: str) -> bool:
    """Whether the answer for name's A carries an RRSIG (asked with the DO bit)."""
    r = await pdns.query(name, "A", want_dnssec=True)
    return any(rrset.rdtype == dns.rdatatype.RRSIG for rrset in r.answer)


async def test_dnssec_states(dns_svc: Svc, pdns: Pdns) -> None:
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    alice = team.alice.client
    await team.bob.client.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.1"]})
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.1"])
    assert not await _signed(pdns, "www.example.com.")
    ds = "60485 5 1 2bb183af5f22588179a53b0a98631fad1a292118"
    assert_error(await alice.put(f"{ZONE}/dnssec/ds", json={"ds": [ds]}), 409, "dnssec_off")
    assert_error(await team.bob.client.post(f"{ZONE}/dnssec", json={"enabled": True}), 403)
    r = await alice.post(f"{ZONE}/dnssec", json={"enabled": True})
    assert r.status_code == 200 and r.json()["dnssec"] == "signing" and set(r.json()) == ZONE_FIELDS
    await _until(lambda: _signed(pdns, "www.example.com."), "signatures (RRSIG) in the answers")
    # The DS of the key PowerDNS made (ECDSA P-256, SHA-256 digest), for the owner to copy.
    detail = (await alice.get(ZONE)).json()
    assert len(detail["dsRecords"]) == 1 and re.fullmatch(r"\d+ 13 2 [0-9a-f]{64}", detail["dsRecords"][0].lower())
    assert (await alice.post(f"{ZONE}/dnssec", json={"enabled": True})).json()["dnssec"] == "signing"
    assert (await alice.get(ZONE)).json()["dsRecords"] == detail["dsRecords"], "enable again keeps the key"
    r = await alice.put(f"{ZONE}/dnssec/ds", json={"ds": []})
    assert r.json()["dnssec"] == "signing" and r.json()["ds"] == []
    r = await alice.put(f"{ZONE}/dnssec/ds", json={"ds": [ds.upper()]})
    assert r.json()["dnssec"] == "ds_pending" and r.json()["ds"] == [ds]
    assert_error(await alice.put(f"{ZONE}/dnssec/ds", json={"ds": ["nonsense"]}), 400, "bad_request")
    assert (await alice.get(ZONE)).json()["ds"] == [ds], "a refused DS changes nothing"
    r = await alice.post(f"{ZONE}/dnssec", json={"enabled": False})
    assert r.json()["dnssec"] == "off" and r.json()["ds"] == []

    async def unsigned() -> bool:
        return not await _signed(pdns, "www.example.com.")
    await _until(unsigned, "no signatures after disable")
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.1"])
    assert (await alice.get(ZONE)).json()["dsRecords"] == []
    assert_error(await alice.post(f"{ZONE}/dnssec", json={"enabled": "yes"}), 400, "bad_request")
    actions = await _actions(dns_svc)
    assert actions.count("dns.dnssec.enable") == 1 and actions.count("dns.dnssec.disable") == 1


async def test_delete_zone_and_org_deletion_blocked(dns_svc: Svc, pdns: Pdns) -> None:
    team = await _team(dns_svc)
    alice = team.alice.client
    await alice.post(Z, json={"name": "example.com"})
    await team.bob.client.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.1"]})
    body = assert_error(await alice.request("DELETE", "/v1/orgs/acme", json={"confirm": "acme"}), 409, "org_not_empty")
    assert body["details"]["holdings"]["zones"] == {"count": 1, "names": ["example.com."]}
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.1"])
    assert_error(await team.bob.client.delete(ZONE), 403)
    assert (await alice.delete(ZONE)).status_code == 204
    assert_error(await alice.get(ZONE), 404)

    async def refused() -> bool:
        return await pdns.rcode("www.example.com.", "A") == "REFUSED"  # not a zone of this nameserver
    await _until(refused, "the zone removed at the nameserver")
    assert "example.com." not in await pdns.nameserver.zone_names()
    assert (await alice.request("DELETE", "/v1/orgs/acme", json={"confirm": "acme"})).status_code == 204
    assert "dns.zone.delete" in await _actions(dns_svc)


async def _serial(pdns: Pdns) -> int:
    return int((await pdns.query("example.com.", "SOA")).answer[0][0].serial)


async def test_outage_delays_but_loses_nothing_and_the_retry_repairs_it(dns_svc: Svc, pdns: Pdns) -> None:
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    await _settled(dns_svc)
    await _answers(pdns, "example.com.", "NS", NAMESERVERS)
    await pdns.stop()
    try:
        r = await team.bob.client.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.7"]})
        assert r.status_code == 200  # stored: the nameserver follows once it is back
        r = await team.bob.client.put(f"{ZONE}/rrsets/@/TXT", json={"records": ["made while down"]})
        assert r.status_code == 200
        # The zone is still shown, its SOA as stored (the serial the nameserver serves is unknown).
        got = await team.vic.client.get(ZONE)
        assert got.status_code == 200
        soa = next(s for s in got.json()["rrsets"] if s["type"] == "SOA")
        assert soa["records"][0].split()[2] == "0"

        async def failed_sync() -> str | None:
            async with dns_svc.ctx.db.transaction(write=False) as s:
                return (await s.scalars(select(Job.id).where(Job.kind == DnsJob.sync,
                                                             Job.last_error.is_not(None)))).first()
        await _until(failed_sync, "a sync attempt failing while the nameserver is down")
        failed = await failed_sync()
        async with dns_svc.ctx.db.transaction(write=False) as s:
            zone = (await s.scalars(select(Zone))).one()
            assert zone.synced_generation < zone.generation
    finally:
        await pdns.start()
    # Nothing but the queue's retry (after its backoff) brings the nameserver up to date.
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.7"])
    await _answers(pdns, "example.com.", "TXT", ['"made while down"'])
    await _settled(dns_svc)
    async with dns_svc.ctx.db.transaction(write=False) as s:
        retried = await s.get(Job, failed)
        assert retried is not None and retried.status == JobStatus.done and retried.attempts >= 2


async def test_the_reconcile_cycle_repairs_what_changed_behind_svcs_back(dns_svc: Svc, pdns: Pdns) -> None:
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    r = await team.bob.client.put(f"{ZONE}/rrsets/www/A", json={"records": ["192.0.2.7"]})
    assert r.status_code == 200
    await _settled(dns_svc)
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.7"])

    # Deleted behind svc's back: the reconcile finds the drift and brings the zone back.
    await pdns.nameserver.delete_zone("example.com.")
    assert await pdns.rcode("www.example.com.", "A") == "REFUSED"
    await _reconcile_cycle(dns_svc)
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.7"])
    # An rrset edited behind svc's back is put back as stored.
    await _settled(dns_svc)
    await pdns.nameserver.apply("example.com.", replace=[RRsetData("www.example.com.", "A", 60, ("203.0.113.66",))],
                                delete=[])
    await _reconcile_cycle(dns_svc)
    await _answers(pdns, "www.example.com.", "A", ["192.0.2.7"])
    # Converged: another pass writes nothing (PowerDNS bumps the SOA serial on every write).
    await _settled(dns_svc)
    serial = await _serial(pdns)
    await _reconcile_cycle(dns_svc)
    await _settled(dns_svc)
    assert await _serial(pdns) == serial


async def test_dns_not_configured(svc: Svc) -> None:
    team = await _team(svc)
    for method, path, body in (("GET", Z, None), ("POST", Z, {"name": "example.com"}), ("GET", ZONE, None),
                               ("DELETE", ZONE, None), ("PUT", f"{ZONE}/rrsets/www/A", {"records": ["192.0.2.1"]}),
                               ("DELETE", f"{ZONE}/rrsets/www/A", None),
                               ("POST", f"{ZONE}/dnssec", {"enabled": True}), ("PUT", f"{ZONE}/dnssec/ds", {"ds": []})):
        r = await team.alice.client.request(method, path, json=body)
        assert_error(r, 503, "dns_not_configured")
    # Roles still come first: a stranger learns nothing.
    assert_error(await team.eve.client.get(Z), 404)


async def test_a_burst_of_changes_is_served_exactly(dns_svc: Svc, pdns: Pdns) -> None:
    """Changes arriving while a sync is sending wait for the next one: none is lost or reordered."""
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    bob = team.bob.client

    async def put(i: int, value: int) -> None:
        r = await bob.put(f"{ZONE}/rrsets/h{i}/A", json={"ttl": 60, "records": [f"192.0.2.{value}"]})
        assert r.status_code == 200, r.text

    await asyncio.gather(*(put(i, 1) for i in range(30)))
    await asyncio.gather(*(put(i, 2) for i in range(0, 30, 2)),
                         *(bob.delete(f"{ZONE}/rrsets/h{i}/A") for i in range(1, 30, 4)))
    for i in range(30):
        want = [] if i % 4 == 1 else [f"192.0.2.{2 if i % 2 == 0 else 1}"]
        await _answers(pdns, f"h{i}.example.com.", "A", want)
    await _settled(dns_svc)
    async with dns_svc.ctx.db.transaction(write=False) as s:
        zone = (await s.scalars(select(Zone))).one()
        assert zone.synced_generation == zone.generation


async def test_a_zone_whose_sync_ran_out_is_repaired_even_while_it_keeps_changing(dns_svc: Svc, pdns: Pdns) -> None:
    """A sync that ran out of attempts leaves its changes pending and no job; the changes after it
    wait for that sync, so the reconcile must not take the zone for one under way for ever."""
    team = await _team(dns_svc)
    await team.alice.client.post(Z, json={"name": "example.com"})
    await _settled(dns_svc)
    await _answers(pdns, "example.com.", "NS", NAMESERVERS)
    # What a dns.sync that ran out of attempts 11 minutes ago leaves: a change pending, no job.
    async with dns_svc.ctx.db.transaction() as s:
        await s.execute(update(Zone).values(generation=Zone.generation + 1,
                                            sync_due_at=utcnow() - timedelta(minutes=11)))
    r = await team.bob.client.put(f"{ZONE}/rrsets/late/A", json={"records": ["192.0.2.44"]})
    assert r.status_code == 200  # stored; it waits for the sync that is due (and will not come)
    await _reconcile_cycle(dns_svc)
    await _answers(pdns, "late.example.com.", "A", ["192.0.2.44"])
