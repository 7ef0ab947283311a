"""`svc dns ...` as a user runs it: the real CLI against a real `svc serve` that drives the real
PowerDNS of the test session (tests/conftest.py `pdns`, as an external PowerDNS: SVC_PDNS_API_URL).
What is stored is checked where it matters: the nameserver answers it (dnspython queries)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import dns.rdatatype
import pytest

from tests.cli.conftest import Cli, running_server, uniq
from tests.support.pdns import PDNS_REQUIRED, Pdns, clear_zones
from tests.support.smtp import eventually

pytestmark = PDNS_REQUIRED

DS_LINE = re.compile(r"^\d{1,5} 13 2 [0-9a-fA-F]{64}$", re.MULTILINE)


@pytest.fixture(scope="module")
async def dns_server(pdns: Pdns, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """`svc serve` driving the session's PowerDNS (zones of earlier tests removed first)."""
    await clear_zones(pdns)
    managed = pdns.running.managed
    settings = {"pdns_api_url": managed.api_url, "pdns_api_key": managed.api_key(),
                "nameservers": pdns.names.nameservers, "hostmaster": pdns.names.hostmaster}
    with running_server(tmp_path_factory.mktemp("svc-dns"), **settings) as url:
        yield url


@pytest.fixture
def me(dns_server: str, tmp_path: Path) -> Cli:
    cli = Cli(dns_server, tmp_path / "me")
    cli.login(uniq("dns"))
    return cli


@pytest.fixture
def zone() -> str:
    """A zone no other test holds (the nameserver is shared)."""
    return f"{uniq('shop')}.example"


async def answered(pdns: Pdns, name: str, rdtype: str, want: list[str]) -> None:
    async def check() -> bool:
        return await pdns.answer(name, rdtype) == sorted(want)

    await eventually(check, what=f"{name} {rdtype} answered as {want}")


async def test_zone_create_list_delete(me: Cli, pdns: Pdns, zone: str) -> None:
    created = me.ok("dns", "zones", "create", zone)
    assert f"Zone {zone} is on svc's nameservers" in created.out
    assert "ns1.svc.test\n" in created.out and "ns2.svc.test\n" in created.out, created.out
    assert "registrar" in created.out
    await answered(pdns, f"{zone}.", "NS", ["ns1.svc.test.", "ns2.svc.test."])

    again = me.ok("dns", "zones", "create", zone.upper(), "--json").json()  # idempotent, any spelling
    assert again["name"] == f"{zone}." and again["dnssec"] == "off"
    assert {(r["name"], r["type"], r["managed_by"]) for r in again["rrsets"]} == {
        ("@", "SOA", "system"), ("@", "NS", "system")}

    listed = me.ok("dns", "zones", "list")
    row = rf"^{re.escape(zone)}\s+yes\s+off\s+0\s+ns1.svc.test, ns2.svc.test\s"
    assert re.search(row, listed.out, re.MULTILINE), listed.out
    assert [z["name"] for z in me.ok("dns", "zones", "list", "--json").json()["zones"]] == [f"{zone}."]

    refused = me.fails("confirm_mismatch", "dns", "zones", "delete", zone, input="other.example\n")
    assert "nothing was changed" in refused.err
    assert me.ok("dns", "zones", "list", "--json").json()["zones"] != []

    deleted = me.ok("dns", "zones", "delete", zone, input=f"{zone}\n")
    assert f"Deleted zone {zone}" in deleted.out
    assert me.ok("dns", "zones", "list", "--json").json()["zones"] == []
    assert "No DNS zones in" in me.ok("dns", "zones", "list").out

    async def gone() -> bool:
        return await pdns.rcode(f"{zone}.", "SOA") == "REFUSED"

    await eventually(gone, what="the deleted zone is no longer served")
    me.fails("not_found", "dns", "zones", "delete", zone, "--yes")


async def test_internationalized_zone(me: Cli, pdns: Pdns) -> None:
    label = uniq("bücher")
    punycode = label.encode("idna").decode()
    created = me.ok("dns", "zones", "create", f"{label}.example")
    assert f"Zone {punycode}.example ({label}.example) is on svc's nameservers" in created.out, created.out
    me.ok("dns", "records", "set", f"{label}.example", "münchen", "A", "192.0.2.4")
    await answered(pdns, f"xn--mnchen-3ya.{punycode}.example.", "A", ["192.0.2.4"])
    found = me.ok("dns", "records", "list", f"{punycode}.example", "--name", "München", "--json").json()
    assert [(r["name"], r["records"]) for r in found["rrsets"]] == [("xn--mnchen-3ya", ["192.0.2.4"])]


async def test_records_set_are_answered_and_listed(me: Cli, pdns: Pdns, zone: str, tmp_path: Path) -> None:
    me.ok("dns", "zones", "create", zone)

    stored = me.ok("dns", "records", "set", zone, "www", "A", "192.0.2.1", "192.0.2.2", "--ttl", "300")
    assert "Stored 2 A records at www" in stored.out and "within a moment" in stored.out, stored.out
    await answered(pdns, f"www.{zone}.", "A", ["192.0.2.1", "192.0.2.2"])

    me.ok("dns", "records", "set", zone, "@", "mx", "10 mail", "20 mx.other.example.")  # type in any case
    await answered(pdns, f"{zone}.", "MX", [f"10 mail.{zone}.", "20 mx.other.example."])

    # --file: one record per line, blank lines and ; comments skipped; a long TXT is split in 255-byte strings.
    spf, long_text = "v=spf1 include:_spf.example.net -all", "k=" + "x" * 300
    (tmp_path / "txt.zone").write_text(f"; the apex TXT\n{spf}\n\n{long_text}\n")
    me.ok("dns", "records", "set", zone, "@", "TXT", "--file", str(tmp_path / "txt.zone"))
    await answered(pdns, f"{zone}.", "TXT", [f'"{spf}"', f'"{long_text[:255]}" "{long_text[255:]}"'])
    me.ok("dns", "records", "set", zone, "_acme-challenge", "TXT", "--file", "-", input="token-123\n")
    await answered(pdns, f"_acme-challenge.{zone}.", "TXT", ['"token-123"'])
    me.ok("dns", "records", "set", zone, "@", "CAA", '0 issue "letsencrypt.org"')
    me.ok("dns", "records", "set", zone, "blog", "CNAME", "www")
    await answered(pdns, f"blog.{zone}.", "CNAME", [f"www.{zone}."])

    table = me.ok("dns", "records", "list", zone).out
    lines = table.splitlines()
    www = next(i for i, ln in enumerate(lines) if ln.split()[:3] == ["www", "A", "300"])
    assert "192.0.2.1" in lines[www] and lines[www + 1].split() == ["192.0.2.2"], table  # one record per line
    soa = next(ln for ln in lines if ln.split()[:2] == ["@", "SOA"])
    assert soa.rstrip().endswith("locked (system)"), table
    assert "locked (system)" not in lines[www]

    only_a = me.ok("dns", "records", "list", zone, "--type", "a", "--json").json()
    assert [(r["name"], r["records"]) for r in only_a["rrsets"]] == [("www", ["192.0.2.1", "192.0.2.2"])]
    at_apex = me.ok("dns", "records", "list", zone, "--name", f"{zone}.", "--json").json()
    assert {r["type"] for r in at_apex["rrsets"]} == {"SOA", "NS", "MX", "TXT", "CAA"}
    assert "No record sets matching" in me.ok("dns", "records", "list", zone, "--name", "nowhere").out

    replaced = me.ok("dns", "records", "set", zone, "www", "A", "198.51.100.7", "--json").json()
    assert replaced == {"name": "www", "type": "A", "ttl": 300, "records": ["198.51.100.7"], "managed_by": None}
    await answered(pdns, f"www.{zone}.", "A", ["198.51.100.7"])

    deleted = me.ok("dns", "records", "delete", zone, "www", "A")
    assert "Deleted the www A records" in deleted.out
    await answered(pdns, f"www.{zone}.", "A", [])
    assert me.ok("dns", "records", "list", zone, "--name", "www", "--json").json()["rrsets"] == []
    assert me.ok("dns", "records", "delete", zone, "blog", "CNAME", "--json").json()["deleted"] is True


async def test_bad_input_is_refused_in_words(me: Cli, pdns: Pdns, zone: str) -> None:
    me.ok("dns", "zones", "create", zone)

    bad = me.fails("bad_request", "dns", "records", "set", zone, "www", "A", "192.0.2.1", "999.1.1.1")
    assert bad.err.startswith("error: The record '999.1.1.1' is not a valid A record: expected an IPv4 "
                              "address"), bad.err
    assert len(bad.err.strip().splitlines()) == 1, bad.err
    ttl = me.fails("bad_request", "dns", "records", "set", zone, "www", "A", "192.0.2.1", "--ttl", "30")
    assert "ttl must be between 60 and 86400" in ttl.err
    soa = me.fails("managed_rrset", "dns", "records", "set", zone, "@", "SOA", "ns1.other. h.other. 1 2 3 4 5")
    assert "managed by svc" in soa.err
    me.fails("managed_rrset", "dns", "records", "set", zone, "@", "NS", "ns1.elsewhere.example.")
    me.fails("managed_rrset", "dns", "records", "delete", zone, "@", "NS")
    me.fails("cname_conflict", "dns", "records", "set", zone, "@", "CNAME", "elsewhere.example.")
    me.fails("no_records", "dns", "records", "set", zone, "www", "A")
    unquoted = me.fails("bad_request", "dns", "records", "set", zone, "@", "MX", "10", "mail")
    assert "The record '10' is not a valid MX record" in unquoted.err
    assert 'hint: quote each record as one argument, such as: "10 mail"' in unquoted.err
    nowhere = me.fails("not_found", "dns", "records", "list", "nowhere.example")
    assert "svc dns zones list" in nowhere.err
    me.fails("not_found", "dns", "records", "delete", zone, "www", "A")
    usage = me("dns", "records", "set", zone, "www", "TLSA", "3 1 1 abcd")
    assert usage.code == 2 and "is not one of A, AAAA" in usage.err

    # The other org cannot take the zone.
    other = Cli(me.api_url, me.home.parent / "other")
    other.login(uniq("other"))
    other.fails("zone_taken", "dns", "zones", "create", zone)

    # Nothing refused reached the nameserver: a later good change is answered, and only it.
    me.ok("dns", "records", "set", zone, "ok", "A", "192.0.2.9")
    await answered(pdns, f"ok.{zone}.", "A", ["192.0.2.9"])
    assert await pdns.answer(f"www.{zone}.", "A") == []
    assert await pdns.answer(f"{zone}.", "NS") == ["ns1.svc.test.", "ns2.svc.test."]


async def test_dnssec_on_ds_off(me: Cli, pdns: Pdns, zone: str) -> None:
    me.ok("dns", "zones", "create", zone)
    me.ok("dns", "records", "set", zone, "www", "A", "192.0.2.1")
    off = me.fails("dnssec_off", "dns", "dnssec", "ds", zone)
    assert f"svc dns dnssec on {zone}" in off.err
    me.fails("dnssec_off", "dns", "dnssec", "ds", zone, "12345 13 2 " + "AB" * 32)

    on = me.ok("dns", "dnssec", "on", zone, "--wait")
    assert f"DNSSEC is on for {zone}" in on.out
    assert DS_LINE.search(on.out), on.out

    ds = me.ok("dns", "dnssec", "ds", zone)
    computed = ds.out.splitlines()
    assert len(computed) == 1 and DS_LINE.fullmatch(computed[0]), ds.out  # stdout: the DS lines only
    assert "registrar" in ds.err and "algorithm 13 (ECDSAP256SHA256)" in ds.err

    async def signed() -> bool:
        r = await pdns.query(f"www.{zone}.", "A", want_dnssec=True)
        return any(s.rdtype == dns.rdatatype.RRSIG for s in r.answer)

    await eventually(signed, what="the zone is signed")

    recorded = me.ok("dns", "dnssec", "ds", zone, *computed[0].split())  # pasted unquoted: one record
    assert "Recorded 1 DS record" in recorded.out and "ds_pending" in recorded.out
    shown = me.ok("dns", "dnssec", "ds", zone, "--json").json()
    assert shown["dnssec"] == "ds_pending" and shown["ds"] == computed == shown["dsRecords"]
    listed = me.ok("dns", "zones", "list").out
    assert re.search(rf"^{re.escape(zone)}\s+yes\s+ds_pending\s+1\s", listed, re.MULTILINE), listed
    me.fails("bad_request", "dns", "dnssec", "ds", zone, "not a ds record")
    cleared = me.ok("dns", "dnssec", "ds", zone, "--clear", "--json").json()
    assert cleared["dnssec"] == "signing" and cleared["ds"] == []

    turned_off = me.ok("dns", "dnssec", "off", zone)
    assert f"DNSSEC is off for {zone}" in turned_off.out and "remove them at your registrar" in turned_off.err

    async def unsigned() -> bool:
        r = await pdns.query(f"www.{zone}.", "A", want_dnssec=True)
        return bool(r.answer) and not any(s.rdtype == dns.rdatatype.RRSIG for s in r.answer)

    await eventually(unsigned, what="the zone is no longer signed")
    assert me.ok("dns", "dnssec", "off", zone, "--json").json()["dnssec"] == "off"


async def test_viewer_may_look_not_change(me: Cli, zone: str) -> None:
    slug = uniq("team")
    me.ok("orgs", "create", slug)
    me.ok("dns", "zones", "create", zone, "--org", slug)
    me.ok("dns", "records", "set", zone, "www", "A", "192.0.2.1", "--org", slug)
    viewer = Cli(me.api_url, me.home.parent / "viewer")
    subject = uniq("viewer")
    viewer.login(subject)
    me.ok("members", "add", slug, subject, "--role", "viewer")

    assert "192.0.2.1" in viewer.ok("dns", "records", "list", zone, "--org", slug).out
    viewer.fails("forbidden", "dns", "records", "set", zone, "www", "A", "192.0.2.2", "--org", slug)
    viewer.fails("forbidden", "dns", "zones", "delete", zone, "--org", slug, "--yes")


def test_dns_turned_off_says_why(tmp_path: Path) -> None:
    with running_server(tmp_path, dns_enabled="false") as url:
        cli = Cli(url, tmp_path / "me")
        cli.login(uniq("nodns"))
        r = cli.fails("dns_not_configured", "dns", "zones", "list")
        assert "hint: this svc server has no nameserver" in r.err


def _pasted(me: Cli, said: str, prefix: str) -> list[str]:
    """The command (up to its --org) a line of `said` tells after `prefix`, as a shell would split it."""
    import shlex

    line = next(line for line in said.splitlines() if prefix in line)
    told = re.search(r"svc (.*?--org \S+)", line.split(prefix, 1)[1])
    assert told is not None, line
    return shlex.split(told.group(1))


def test_every_printed_command_works_when_pasted(me: Cli, zone: str) -> None:
    """In an org that is not the person's own (their folder says nothing), each command svc prints
    as the next step names the org, so it works pasted as it is."""
    org = uniq("paste")
    me.ok("orgs", "create", org)
    created = me.ok("dns", "zones", "create", zone, "--org", org)
    me.ok(*_pasted(me, created.out, "Add records with: "))
    assert me.ok("dns", "records", "list", zone, "--org", org, "--json").json()["rrsets"]
    on = me.ok("dns", "dnssec", "on", zone, "--org", org)
    assert _pasted(me, on.out, "Next: ") == ["dns", "dnssec", "ds", zone, "--org", org]
    waited = me.ok("dns", "dnssec", "on", zone, "--org", org, "--wait")
    record = _pasted(me, waited.err, "then record them with: ")
    assert record[:3] == ["dns", "dnssec", "ds"] and record[-2:] == ["--org", org]
    ds_line = DS_LINE.search(waited.out)
    assert ds_line is not None, waited.out
    recorded = me.ok(*[ds_line.group(0) if w == "<DS>" else w for w in record])
    assert "Recorded 1 DS record" in recorded.out


def test_zones_check_and_list_say_the_delegation(me: Cli, zone: str) -> None:
    """This server trusts its own PowerDNS as the public DNS (a local run): a zone is delegated."""
    me.ok("dns", "zones", "create", zone)
    checked = me.ok("dns", "zones", "check", zone)
    assert f"{zone} is delegated to svc's nameservers" in checked.out
    assert me.ok("dns", "zones", "check", zone, "--json").json()["delegated"] is True
    listed = me.ok("dns", "zones", "list", env=me.env(COLUMNS="160")).out
    assert re.search(rf"^{re.escape(zone)}\s+yes\s", listed, re.MULTILINE) and "DELEGATED" in listed, listed
    me.fails("not_found", "dns", "zones", "check", "nothere.example")
