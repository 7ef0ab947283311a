"""`svc orgs ...` and `svc members ...` against a real server."""

from __future__ import annotations

from typing import Any

from tests.cli.conftest import Cli, People, uniq


def _slugs(cli: Cli) -> dict[str, dict[str, Any]]:
    return {o["slug"]: o for o in cli.ok("orgs", "list", "--json").json()["orgs"]}


def test_orgs_create_list_rename_delete_round_trip(cli: Cli) -> None:
    cli.login(uniq("owner"))
    slug = uniq("acme")

    created = cli.ok("orgs", "create", slug, "--name", "Acme [bold]Inc", "--json").json()
    assert created["slug"] == slug and created["name"] == "Acme [bold]Inc" and created["personal"] is False

    listed = cli.ok("orgs", "list")
    assert slug in listed.out and "Acme [bold]Inc" in listed.out  # user text is never read as markup
    assert _slugs(cli)[slug]["role"] == "admin"

    renamed = cli.ok("orgs", "rename", slug, "Acme Corp", "--json").json()
    assert renamed["slug"] == slug and renamed["name"] == "Acme Corp" and renamed["role"] == "admin"
    assert "Acme Corp" in cli.ok("orgs", "rename", slug, "Acme Corp").out
    assert _slugs(cli)[slug]["name"] == "Acme Corp"

    deleted = cli.ok("orgs", "delete", slug, "--yes", "--json").json()
    assert deleted == {"deleted": True, "org": slug}
    assert slug not in _slugs(cli)
    cli.fails("not_found", "orgs", "rename", slug, "Gone")


def test_orgs_create_without_a_name_and_in_text(cli: Cli) -> None:
    cli.login(uniq("plain"))
    slug = uniq("shop")
    r = cli.ok("orgs", "create", slug)
    assert f"Created org {slug}" in r.out
    assert slug in _slugs(cli)


def test_taken_slug_and_bad_slug_are_errors_with_their_codes(cli: Cli, people: People) -> None:
    cli.login(uniq("first"))
    slug = uniq("taken")
    cli.ok("orgs", "create", slug)
    other = people("other")
    other.login(uniq("second"))
    r = other.fails("org_slug_taken", "orgs", "create", slug)
    assert r.err.startswith("error: ") and "(org_slug_taken)" in r.err
    other.fails("org_slug_taken", "orgs", "create", slug, "--json")  # --json changes nothing on failure
    other.fails("bad_request", "orgs", "create", "NO")
    assert slug not in _slugs(other)


def test_delete_asks_for_the_slug_unless_yes(cli: Cli) -> None:
    cli.login(uniq("careful"))
    slug = uniq("keep")
    cli.ok("orgs", "create", slug)

    r = cli.fails("confirm_mismatch", "orgs", "delete", slug, input="not-it\n")
    assert slug in r.err  # the prompt names the org
    assert slug in _slugs(cli)
    cli.fails("aborted", "orgs", "delete", slug, input="")  # no answer at all: nothing happens
    assert slug in _slugs(cli)

    r = cli.ok("orgs", "delete", slug, "--json", input=f"{slug}\n")
    assert r.json() == {"deleted": True, "org": slug}  # the prompt went to stderr, not into the JSON
    assert slug not in _slugs(cli)


def test_personal_org_cannot_be_deleted(cli: Cli) -> None:
    subject = uniq("solo")
    cli.login(subject)
    cli.fails("personal_org", "orgs", "delete", subject, "--confirm")


def test_notifications_list(cli: Cli) -> None:
    subject = uniq("note")
    cli.login(subject)
    assert cli.ok("orgs", "notifications", subject, "--json").json() == {"notifications": []}
    assert "No notifications" in cli.ok("orgs", "notifications", subject).out


def test_members_add_set_role_remove_with_a_second_user(people: People) -> None:
    alice, bob = people("alice"), people("bob")
    alice.login(uniq("alice"))
    bob_subject = uniq("bob")
    bob_id = bob.login(bob_subject)["userId"]
    org = uniq("team")
    alice.ok("orgs", "create", org)

    added = alice.ok("members", "add", org, bob_subject, "--role", "viewer", "--json").json()
    assert added["user"]["id"] == bob_id and added["user"]["provider"] == "dev" and added["role"] == "viewer"
    assert _slugs(bob)[org]["role"] == "viewer"

    members = alice.ok("members", "list", org, "--json").json()["members"]
    assert {m["user"]["subject"]: m["role"] for m in members}[bob_subject] == "viewer"
    assert bob_subject in alice.ok("members", "list", org).out

    # A viewer may neither list members nor rename the org.
    bob.fails("forbidden", "members", "list", org)
    bob.fails("forbidden", "orgs", "rename", org, "Mine now")

    # set-role takes the subject (or the user id).
    changed = alice.ok("members", "set-role", org, bob_subject, "admin", "--json").json()
    assert changed["role"] == "admin" and changed["user"]["id"] == bob_id
    assert "is now member" in alice.ok("members", "set-role", org, bob_id, "member").out
    assert _slugs(bob)[org]["role"] == "member"

    removed = alice.ok("members", "remove", org, bob_subject, "--json").json()
    assert removed == {"removed": True, "org": org, "userId": bob_id}
    assert org not in _slugs(bob)
    alice.fails("not_found", "members", "remove", org, bob_subject)


def test_members_leave_and_the_last_admin_rule(people: People) -> None:
    alice, bob = people("alice"), people("bob")
    alice_subject, bob_subject = uniq("alice"), uniq("bob")
    alice.login(alice_subject)
    bob_id = bob.login(bob_subject)["userId"]
    org = uniq("club")
    alice.ok("orgs", "create", org)
    alice.ok("members", "add", org, bob_subject, "--role", "member", "--provider", "dev")

    left = bob.ok("members", "leave", org, "--json").json()
    assert left == {"removed": True, "org": org, "userId": bob_id}
    assert org not in _slugs(bob)
    members = alice.ok("members", "list", org, "--json").json()["members"]
    assert bob_subject not in [m["user"]["subject"] for m in members]

    alice.fails("last_admin", "members", "leave", org)
    alice.fails("last_admin", "members", "set-role", org, alice_subject, "viewer")
    assert _slugs(alice)[org]["role"] == "admin"


def test_members_add_errors(people: People) -> None:
    alice = people("alice")
    alice.login(uniq("alice"))
    org = uniq("errs")
    alice.ok("orgs", "create", org)
    alice.fails("user_not_found", "members", "add", org, uniq("never-logged-in"))
    bob_subject = uniq("bob")
    people("bob").login(bob_subject)
    alice.ok("members", "add", org, bob_subject)
    alice.fails("already_member", "members", "add", org, bob_subject, "--role", "admin")
    alice.fails("not_found", "members", "set-role", org, "nobody-here", "admin")
    r = alice("members", "add", org, bob_subject, "--role", "owner")
    assert r.code == 2 and r.out == ""  # not a role: a usage error, no request
