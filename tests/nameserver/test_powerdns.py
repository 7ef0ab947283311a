"""The Nameserver port on a real PowerDNS: zones and record sets round-trip through the API and are
answered on the DNS port (queried with dnspython), DNSSEC signs and stops signing, and failures
map to NameserverUnavailable / NameserverRefused."""

from __future__ import annotations

import asyncio

import dns.dnssec
import dns.message
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import httpx
import pytest

from svc.adapters.nameserver.port import NameserverRefused, NameserverUnavailable, NameserverZoneMissing, RRsetData
from svc.adapters.nameserver.powerdns import PowerDnsNameserver
from tests.support.pdns import NAMESERVERS, PDNS_REQUIRED, Pdns, free_dns_port

pytestmark = PDNS_REQUIRED

LONG_TXT = '"' + "a" * 255 + '" "' + "b" * 45 + '"'


def rrsets(zone: str) -> list[RRsetData]:
    return [
        RRsetData(f"www.{zone}", "A", 300, ("192.0.2.1", "192.0.2.2")),
        RRsetData(f"www.{zone}", "AAAA", 300, ("2001:db8::1",)),
        RRsetData(zone, "MX", 300, (f"10 mail.{zone}", f"20 mail2.{zone}")),
        RRsetData(zone, "TXT", 600, ('"v=spf1 -all"', LONG_TXT)),
        RRsetData(f"blog.{zone}", "CNAME", 300, ("elsewhere.example.net.",)),
        RRsetData(f"_sip._tcp.{zone}", "SRV", 300, (f"10 60 5060 sip.{zone}",)),
        RRsetData(zone, "CAA", 300, ('0 issue "letsencrypt.org"',)),
    ]


async def test_zone_and_rrsets_round_trip_and_are_served(pdns: Pdns) -> None:
    ns = pdns.nameserver
    zone = "roundtrip.test."
    assert await ns.zone(zone) is None
    await ns.ensure_zone(zone, nameservers=NAMESERVERS)
    assert zone in await ns.zone_names()
    await ns.apply(zone, replace=rrsets(zone), delete=[])

    state = await ns.zone(zone)
    assert state is not None and state.name == zone and state.dnssec is False
    held = {(r.name, r.type): r for r in state.rrsets}
    for want in rrsets(zone):
        assert held[(want.name, want.type)] == RRsetData(want.name, want.type, want.ttl, tuple(sorted(want.records)))
    # The SOA names the first nameserver and the hostmaster; the apex NS is the service's set.
    soa = held[(zone, "SOA")].records[0].split()
    assert soa[:2] == ["ns1.svc.test.", "hostmaster.svc.test."]
    assert held[(zone, "NS")].records == tuple(NAMESERVERS)

    # Answered on the DNS port, each as dnspython parses the text the port holds.
    for want in rrsets(zone):
        expected = sorted(dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(want.type), c).to_text()
                          for c in want.records)
        assert await pdns.answer(want.name, want.type) == expected, want
    assert await pdns.answer(zone, "NS") == NAMESERVERS
    # The TXT string over 255 bytes arrives as the two chunks it was given in.
    answer = pdns.resolver().resolve(zone, "TXT")
    strings = sorted(tuple(rd.strings) for rd in answer)
    assert (b"a" * 255, b"b" * 45) in strings


async def test_apply_replaces_deletes_and_is_all_or_nothing(pdns: Pdns) -> None:
    ns = pdns.nameserver
    zone = "apply.test."
    await ns.ensure_zone(zone, nameservers=NAMESERVERS)
    await ns.apply(zone, replace=rrsets(zone), delete=[])
    await ns.apply(zone, replace=[RRsetData(f"www.{zone}", "A", 60, ("198.51.100.7",))],
                   delete=[(f"www.{zone}", "AAAA"), (f"nothing.{zone}", "A")])
    assert await pdns.answer(f"www.{zone}", "A") == ["198.51.100.7"]
    assert await pdns.answer(f"www.{zone}", "AAAA") == []

    # One bad record refuses the whole change: nothing of it is applied.
    with pytest.raises(NameserverRefused, match=r"422.*999\.1\.1\.1"):
        await ns.apply(zone, replace=[RRsetData(f"www.{zone}", "A", 60, ("192.0.2.9",)),
                                      RRsetData(f"bad.{zone}", "A", 60, ("999.1.1.1",))], delete=[])
    assert await pdns.answer(f"www.{zone}", "A") == ["198.51.100.7"]


async def test_nothing_to_apply_sends_nothing(pdns: Pdns) -> None:
    ns = pdns.nameserver
    zone = "noop.test."
    await ns.ensure_zone(zone, nameservers=NAMESERVERS)
    before = await pdns.answer(zone, "SOA")
    await ns.apply(zone, replace=[], delete=[])
    # An empty PATCH would have bumped the serial.
    assert await pdns.answer(zone, "SOA") == before


async def test_ensure_and_delete_are_idempotent(pdns: Pdns) -> None:
    ns = pdns.nameserver
    zone = "idem.test."
    # A name queried before its zone exists (a caching PowerDNS would keep answering REFUSED).
    assert await pdns.rcode(f"www.{zone}", "A") == "REFUSED"
    await ns.ensure_zone(zone, nameservers=NAMESERVERS)
    await ns.apply(zone, replace=[RRsetData(f"www.{zone}", "A", 300, ("192.0.2.1",))], delete=[])
    # Ensuring again leaves the zone as it is (records kept, the NS set not rewritten).
    await ns.ensure_zone(zone, nameservers=["other.example.net."])
    assert await pdns.answer(f"www.{zone}", "A") == ["192.0.2.1"]
    assert await pdns.answer(zone, "NS") == NAMESERVERS

    await ns.delete_zone(zone)
    await ns.delete_zone(zone)
    assert await ns.zone(zone) is None
    assert zone not in await ns.zone_names()
    assert await pdns.rcode(f"www.{zone}", "A") == "REFUSED"
    # A change in a zone that is gone is refused as such (the sync then converges the whole zone).
    for replace, delete in (([], [(f"www.{zone}", "A")]), ([RRsetData(f"www.{zone}", "A", 300, ("192.0.2.1",))], [])):
        with pytest.raises(NameserverZoneMissing, match="does not exist"):
            await ns.apply(zone, replace=replace, delete=delete)
    assert await ns.ds_records(zone) == []


async def test_dnssec_on_signs_and_gives_ds_off_removes_them(pdns: Pdns) -> None:
    ns = pdns.nameserver
    zone = "signed.test."
    await ns.ensure_zone(zone, nameservers=NAMESERVERS)
    await ns.apply(zone, replace=[RRsetData(f"www.{zone}", "A", 300, ("192.0.2.1",))], delete=[])
    assert await ns.ds_records(zone) == []
    assert not _rrsigs(await pdns.query(f"www.{zone}", "A", want_dnssec=True))

    await ns.set_dnssec(zone, enabled=True)
    state = await ns.zone(zone)
    assert state is not None and state.dnssec
    ds = await ns.ds_records(zone)
    assert len(ds) == 1 and ds[0].split()[2] == "2", ds
    # Enabling again keeps the key: the DS the owner registered stays right.
    await ns.set_dnssec(zone, enabled=True)
    assert await ns.ds_records(zone) == ds

    # Signed answers, and the signatures verify against the zone's DNSKEY, whose DS is the one given.
    answer = await pdns.query(f"www.{zone}", "A", want_dnssec=True)
    sigs = _rrsigs(answer)
    assert sigs
    keys = await pdns.query(zone, "DNSKEY", want_dnssec=True)
    dnskey = next(s for s in keys.answer if s.rdtype == dns.rdatatype.DNSKEY)
    origin = dns.name.from_text(zone)
    a = next(s for s in answer.answer if s.rdtype == dns.rdatatype.A)
    sigset = next(s for s in answer.answer if s.rdtype == dns.rdatatype.RRSIG)
    dns.dnssec.validate(a, sigset, {origin: dnskey})
    ksk = next(k for k in dnskey if k.flags & 0x0001)
    assert dns.dnssec.make_ds(origin, ksk, "SHA256").to_text() == ds[0]

    await ns.set_dnssec(zone, enabled=False)
    assert await ns.ds_records(zone) == []
    assert not _rrsigs(await pdns.query(f"www.{zone}", "A", want_dnssec=True))
    assert await pdns.answer(f"www.{zone}", "A") == ["192.0.2.1"]
    state = await ns.zone(zone)
    assert state is not None and not state.dnssec


async def test_concurrent_writes_all_land(pdns: Pdns) -> None:
    """sqlite PowerDNS fails concurrent writes with 500 "database is locked": the adapter sends one
    at a time, so callers in parallel all succeed."""
    ns = pdns.nameserver
    zones = [f"c{i}.test." for i in range(4)]
    await asyncio.gather(*(ns.ensure_zone(z, nameservers=NAMESERVERS) for z in zones))
    await asyncio.gather(*(ns.apply(z, replace=[RRsetData(f"h{j}.{z}", "A", 60, (f"192.0.2.{j + 1}",))], delete=[])
                           for z in zones for j in range(5)))
    for z in zones:
        assert await pdns.answer(f"h4.{z}", "A") == ["192.0.2.5"]
    await asyncio.gather(*(ns.delete_zone(z) for z in zones))


async def test_refusals_carry_powerdns_reason(pdns: Pdns) -> None:
    ns = pdns.nameserver
    with pytest.raises(NameserverRefused, match=r"422.*(canonical|unsupported)"):
        await ns.ensure_zone("bücher.test.", nameservers=NAMESERVERS)
    with pytest.raises(NameserverRefused):
        await ns.ensure_zone("x.test.", nameservers=[])


async def test_unreachable_api_is_unavailable() -> None:
    ns = PowerDnsNameserver(f"http://127.0.0.1:{free_dns_port()}", "key", hostmaster="hostmaster.svc.test.")
    try:
        with pytest.raises(NameserverUnavailable, match="did not answer") as caught:
            await ns.zone_names()
        assert "key" not in str(caught.value).replace("X-API-Key", "")
        with pytest.raises(NameserverUnavailable):
            await ns.apply("a.test.", replace=[RRsetData("www.a.test.", "A", 60, ("192.0.2.1",))], delete=[])
        assert not await ns.ping()
    finally:
        await ns.aclose()


async def test_wrong_key_is_unavailable_with_a_hint(pdns: Pdns) -> None:
    ns = PowerDnsNameserver(pdns.nameserver.api_url, "wrong", hostmaster="hostmaster.svc.test.")
    try:
        with pytest.raises(NameserverUnavailable, match=r"401.*SVC_PDNS_API_KEY"):
            await ns.zone_names()
    finally:
        await ns.aclose()


async def test_a_500_on_a_write_is_retried_then_unavailable() -> None:
    """The "database is locked" answer (a bare 500) is retried; one that persists is an outage."""
    calls: list[str] = []
    fail_times = 2

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) <= fail_times:
            return httpx.Response(500, text="Internal Server Error", headers={"content-type": "text/plain"})
        return httpx.Response(204)

    ns = PowerDnsNameserver("http://pdns.invalid", "k", hostmaster="h.test.", transport=httpx.MockTransport(handler))
    try:
        await ns.apply("a.test.", replace=[RRsetData("www.a.test.", "A", 60, ("192.0.2.1",))], delete=[])
        assert calls == ["PATCH"] * 3
        calls.clear()
        fail_times = 100
        with pytest.raises(NameserverUnavailable, match="500"):
            await ns.apply("a.test.", replace=[RRsetData("www.a.test.", "A", 60, ("192.0.2.1",))], delete=[])
        assert len(calls) == 5
    finally:
        await ns.aclose()


def _rrsigs(message: dns.message.Message) -> list[dns.rdata.Rdata]:
    return [rd for s in message.answer if s.rdtype == dns.rdatatype.RRSIG for rd in s]
