"""`svc domains ...` as a user runs it: the real CLI against a real `svc serve` with the session's
PowerDNS and a fake registrar (a real HTTP server in this process, on a thread of its own: conftest
`domains_server`). The registrar's ledger is the proof of what was charged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, ThreadedRegistrar, uniq
from tests.support.pdns import PDNS_REQUIRED
from tests.support.wait import until_sync

pytestmark = PDNS_REQUIRED

CONTACT = ("--name", "Alice Example", "--email", "alice@example.net", "--phone", "+1.5555551234",
           "--street", "1 Main St", "--city", "Springfield", "--postal-code", "12345", "--country", "us")


@pytest.fixture
def me(domains_server: tuple[str, ThreadedRegistrar], tmp_path: Path) -> tuple[Cli, str]:
    """A signed-in admin of an org of their own, and that org's slug."""
    cli = Cli(domains_server[0], tmp_path / "me")
    cli.login(uniq("owner"))
    slug = uniq("dom")
    cli.ok("orgs", "create", slug)
    return cli, slug


def test_search_a_word_under_the_registrars_tlds(me: tuple[Cli, str],
                                                 domains_server: tuple[str, ThreadedRegistrar]) -> None:
    cli, slug = me
    registrar = domains_server[1]
    org = ("--org", slug)
    word = uniq("acme")
    registrar.taken(f"{word}.net")
    checks = len(registrar.calls("check"))

    found = cli.ok("domains", "search", word.upper(), *org)
    table = {line.split()[0]: line.split()[1:] for line in found.out.splitlines() if line.startswith(word)}
    # The registrar's TLDs, the usual ones first, each priced; a name somebody holds is not for sale.
    assert list(table)[:6] == [f"{word}.{tld}" for tld in ("com", "net", "org", "io", "dev", "app")], found.out
    assert table[f"{word}.com"] == ["yes", "$12.00", "$14.00/year"]
    assert table[f"{word}.io"] == ["yes", "$39.00", "$39.00/year"]
    assert table[f"{word}.net"][0] == "no"
    assert "svc domains buy NAME" in found.out
    assert len(registrar.calls("check")) == checks + 1  # one check call for the whole search

    # check and search are one command; --json gives the API's answer; a full name still works beside it.
    results = cli.ok("domains", "check", word, f"{word}-other.dev", *org, "--json").json()["results"]
    assert [r["name"] for r in results][-1] == f"{word}-other.dev"
    assert {"name": f"{word}.dev", "available": True, "priceCents": 1500, "renewalCents": 1700} in results
    assert len(results) <= 11
    # One word a request (each costs up to ten registrar checks); a bad word is refused in words.
    two = cli.fails("bad_request", "domains", "check", word, "other", *org)
    assert "names[1]" in two.err and "one word at a time" in two.err
    bad = cli.fails("bad_request", "domains", "check", "no spaces", *org)
    assert "names[0]" in bad.err and "top-level domains" not in bad.err


def test_dnssec_on_a_bought_domain_sends_the_ds_itself(me: tuple[Cli, str],
                                                        domains_server: tuple[str, ThreadedRegistrar]) -> None:
    cli, slug = me
    registrar = domains_server[1]
    org = ("--org", slug)
    name = f"{uniq('signed')}.com"
    cli.ok("domains", "buy", name, *CONTACT, "--yes", *org)

    on = cli.ok("dns", "dnssec", "on", name, "--wait", *org)
    assert "svc bought it, so svc sends them to the registrar itself" in on.err and "Nothing to register" in on.err
    ds = [line for line in on.out.splitlines() if re.fullmatch(r"\d+ 13 2 [0-9a-fA-F]{64}", line)]
    assert len(ds) == 1 and registrar.ds(name) == [ds[0].upper()]  # --wait waited for the registrar

    def at_registrar() -> str:
        zone = next(z for z in cli.ok("dns", "zones", "list", *org, "--json").json()["zones"]
                    if z["name"] == f"{name}.")
        return str(zone["registrarDs"])
    assert at_registrar() in ("sent", "published")
    listed = cli.ok("dns", "zones", "list", *org)
    assert re.search(rf"^{re.escape(name)}\s.*\b(sent|published)\b", listed.out, re.MULTILINE), listed.out
    cli.fails("ds_managed", "dns", "dnssec", "ds", name, "--clear", *org)

    off = cli.ok("dns", "dnssec", "off", name, *org)
    assert "svc removes the DS at the registrar first" in off.err, off.err
    until_sync(lambda: registrar.ds(name) == [] and at_registrar() == "none", what="the DS gone from the registrar")


def test_check_buy_and_manage(me: tuple[Cli, str], domains_server: tuple[str, ThreadedRegistrar]) -> None:
    cli, slug = me
    registrar = domains_server[1]
    org = ("--org", slug)
    name = f"{uniq('shop')}.com"

    checked = cli.ok("domains", "check", name.upper(), "x.pineapple", *org)
    assert re.search(rf"^{re.escape(name)}\s+yes\s+\$12\.00\s+\$14\.00/year", checked.out, re.MULTILINE), checked.out
    assert re.search(r"^x\.pineapple\s+no\s+-\s+-", checked.out, re.MULTILINE), checked.out
    results = cli.ok("domains", "check", name, *org, "--json").json()["results"]
    assert results == [{"name": name, "available": True, "priceCents": 1200, "renewalCents": 1400}]

    # Refused before anything is sent: --json without --yes, a contact option missing with --yes.
    cli.fails("confirm_needed", "domains", "buy", name, *CONTACT, *org, "--json")
    missing = cli.fails("contact_needed", "domains", "buy", name, *CONTACT[:4], *CONTACT[6:], "--yes", *org)
    assert "--phone" in missing.err
    # Asked: the missing contact fields, then the purchase; "n" buys nothing.
    asked = cli.fails("cancelled", "domains", "buy", name, "--years", "2", *CONTACT[:4], *org,
                      input="+1.5555551234\n1 Main St\nSpringfield\n12345\nus\nn\n")
    assert f"{name}: $24.00 for 2 years ($12.00 a year; then $14.00 a year to renew)" in asked.err
    assert "Phone, as +<country code>.<number>" in asked.err and "Alice Example, alice@example.net" in asked.err
    assert "The registrar's verification email goes to alice@example.net" in asked.err
    assert f"Buy {name} for $24.00? [y/N]" in asked.err
    assert registrar.charges(name) == (0, 0)

    bought = cli.ok("domains", "buy", name, "--years", "2", *CONTACT, "--yes", *org)
    steps = [ln.split()[0] for ln in bought.err.splitlines() if ln.startswith("  ") and ln.split()]
    assert [s for s in steps if s in ("quote", "payment", "registered", "nameservers")] == \
        ["quote", "payment", "registered", "nameservers"], bought.err
    assert f"Bought {name}." in bought.out and f"{name}: active (bought), until " in bought.out
    assert "Nameservers: ns1.svc.test, ns2.svc.test" in bought.out
    assert "verification email to alice@example.net" in bought.out  # the API's notice
    assert registrar.charges(name) == (2400, 0)
    held = next(d for d in registrar.domains() if d["name"] == name)
    assert held["contact"]["email"] == "alice@example.net" and held["contact"]["country"] == "US"
    again = cli.ok("domains", "buy", name, *CONTACT, "--yes", *org, "--json").json()
    assert again["status"] == "active" and registrar.charges(name) == (2400, 0)

    listed = cli.ok("domains", "list", *org)
    assert re.search(rf"^{re.escape(name)}\s+active\s+purchase\s+\d{{4}}-\d\d-\d\d\s+yes\s+yes", listed.out,
                     re.MULTILINE), listed.out
    assert [d["name"] for d in cli.ok("domains", "list", *org, "--json").json()["domains"]] == [name]
    shown = cli.ok("domains", "show", name, *org)
    assert re.search(r"quote\s+Priced at \$24\.00 for 2 year", shown.out) and "nameservers" in shown.out
    detail = cli.ok("domains", "show", name, *org, "--json").json()
    assert [h["action"] for h in reversed(detail["history"])] == ["quote", "payment", "registered", "nameservers"]

    assert "is unlocked: it can be transferred away" in cli.ok("domains", "unlock", name, *org).out
    assert cli.ok("domains", "lock", name, *org, "--json").json()["locked"] is True
    off = cli.ok("domains", "auto-renew", name, "off", *org)
    assert f"Auto-renew of {name} is off." in off.out and "registrar-side auto-renew stays on" in off.out
    assert cli.ok("domains", "auto-renew", name, "on", *org, "--json").json()["autoRenew"] is True
    cli.fails("bad_request", "domains", "auto-renew", name, "maybe", *org)
    code = cli.ok("domains", "auth-code", name, *org)
    assert re.fullmatch(r"[A-Za-z0-9]{16}\n", code.out) and "svc does not record it" in code.err
    assert len(cli.ok("domains", "auth-code", name, *org, "--json").json()["code"]) == 16
    renewed = cli.ok("domains", "renew", name, "--years", "1", *org, input="y\n")
    assert f"Renew {name} for 1 year, for $14.00 ($14.00 a year)?" in renewed.err and "Renewed" in renewed.out
    cli.fails("confirm_needed", "domains", "renew", name, "--years", "1", *org, "--json")
    synced = cli.ok("domains", "sync", name, *org, "--json").json()
    assert synced["status"] == "active"
    assert synced["expiresAt"][:4] == str(int(detail["expiresAt"][:4]) + 1)  # renewed: a year more
    assert "Read back from the registrar" in cli.ok("domains", "show", name, *org).out

    # Imported: no registrar call; its registration is elsewhere.
    other = f"{uniq('elsewhere')}.org"
    imported = cli.ok("domains", "import", other, *org)
    assert f"Imported {other}" in imported.out and "ns1.svc.test, ns2.svc.test" in imported.out
    assert json.loads(cli.ok("domains", "import", other, *org, "--json").out)["source"] == "import"
    cli.fails("domain_imported", "domains", "lock", other, *org)
    cli.fails("not_found", "domains", "show", f"{uniq('nope')}.com", *org)


def test_declined_then_stopped_midway_then_resumed(me: tuple[Cli, str],
                                                  domains_server: tuple[str, ThreadedRegistrar]) -> None:
    cli, slug = me
    registrar = domains_server[1]
    org = ("--org", slug)
    name = f"{uniq('flaky')}.com"

    registrar.fail("charge", "decline")
    declined = cli.fails("payment_failed", "domains", "buy", name, *CONTACT, "--yes", *org)
    assert "Payment declined" in declined.err  # the step that stopped it, printed as it happened
    assert registrar.charges(name) == (0, 0)

    registrar.fail("register", "timeout")  # held past svc's registrar timeout (a second)
    stopped = cli.fails("saga_incomplete", "domains", "buy", name, *CONTACT, "--yes", *org)
    assert "Not paid yet: continuing it charges the registrar's price (Priced at $12.00" in stopped.err
    assert "hint: run the same command again to continue" in stopped.err and "charged once" in stopped.err
    registrar.release()
    assert cli.ok("domains", "show", name, *org, "--json").json()["status"] == "registering"
    assert "Its purchase stopped midway" in cli.ok("domains", "show", name, *org).out

    resumed = cli.ok("domains", "buy", name, *CONTACT, "--yes", *org, "--json")
    assert "Already paid: continuing it charges nothing more." in resumed.err
    assert resumed.json()["status"] == "active" and "alice@example.net" in resumed.json()["notice"]
    assert registrar.charges(name) == (1200, 0)
    assert len([d for d in registrar.domains() if d["name"] == name]) == 1
