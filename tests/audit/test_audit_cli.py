"""`svc audit list` against a real server, as a subprocess."""

from __future__ import annotations

from tests.cli.conftest import Cli, People, uniq


def test_audit_list_filters_pages_and_prints_json(people: People) -> None:
    alice, bob = people("alice"), people("bob")
    alice_subject, bob_subject = uniq("alice"), uniq("bob")
    alice.login(alice_subject)
    bob.login(bob_subject)
    org = uniq("aud")
    alice.ok("orgs", "create", org)
    alice.ok("projects", "create", "web", "--org", org)
    for name in ("API_KEY", "DB_URL"):
        alice.ok("secrets", "set", name, "--org", org, "--project", "web", input="a secret value\n")
    alice.ok("members", "add", org, bob_subject, "--role", "member")

    data = alice.ok("audit", "list", "--org", org, "--json").json()
    assert [e["action"] for e in data["events"]] == ["member.add", "secret.set", "secret.set"]
    assert data["nextCursor"] is None
    assert data["events"][0]["actor"] == f"dev:{alice_subject}"
    assert "a secret value" not in alice.ok("audit", "list", "--org", org, "--json").out

    table = alice.ok("audit", "list", "--org", org, env=alice.env(COLUMNS="120")).out
    lines = table.splitlines()
    assert all(len(line) <= 120 for line in lines), table
    assert lines[0].split() == ["AT", "ACTOR", "ACTION", "TARGET", "DETAILS"]
    assert "secret.set" in table and "web/DB_URL" in table and "name=DB_URL" in table
    narrow = alice.ok("audit", "list", "--org", org, env=alice.env(COLUMNS="60")).out
    assert all(len(line) <= 60 for line in narrow.splitlines()), narrow

    secrets = alice.ok("audit", "list", "--org", org, "--action", "secret.", "--json").json()
    assert [e["target"] for e in secrets["events"]] == ["web/DB_URL", "web/API_KEY"]
    assert alice.ok("audit", "list", "--org", org, "--actor", f"dev:{bob_subject}", "--json").json() == {
        "events": [], "nextCursor": None}
    assert "No audit events." in alice.ok("audit", "list", "--org", org, "--actor", "dev:nobody").out

    # Paging: the next page's command is told on stderr, and works when pasted; --cursor takes the
    # cursor (--before, its earlier name, too).
    first = alice.ok("audit", "list", "--org", org, "--limit", "2")
    told = next(line for line in first.err.splitlines() if "Older events: svc audit list --org" in line)
    assert "--limit 2 --cursor " in told
    pasted = alice.ok(*told.split("svc ", 1)[1].split(), "--json").json()
    assert [e["target"] for e in pasted["events"]] == ["web/API_KEY"] and pasted["nextCursor"] is None
    cursor = alice.ok("audit", "list", "--org", org, "--limit", "2", "--json").json()["nextCursor"]
    rest = alice.ok("audit", "list", "--org", org, "--limit", "2", "--before", cursor, "--json").json()
    assert rest == pasted

    # Refusals are the API's, with its code.
    alice.fails("bad_request", "audit", "list", "--org", org, "--limit", "0")
    alice.fails("bad_request", "audit", "list", "--org", org, "--action", "Not An Event")
    bob.fails("forbidden", "audit", "list", "--org", org)


def test_audit_list_defaults_to_the_personal_org(cli: Cli) -> None:
    subject = uniq("solo")
    cli.login(subject)
    cli.ok("projects", "create", "site")  # records nothing in the trail
    data = cli.ok("audit", "list", "--json").json()
    assert data == {"events": [], "nextCursor": None}
    cli.ok("secrets", "set", "TOKEN", "--project", "site", input="x\n")
    assert [e["action"] for e in cli.ok("audit", "list", "--json").json()["events"]] == ["secret.set"]
