"""`svc invites ...`, `svc tokens ...` and `svc keys ...` against a real server."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.cli.conftest import Cli, People, uniq


def _ssh_key(home: Path, comment: str) -> Path:
    """An ed25519 key pair at ~/.ssh/id_ed25519(.pub), as ssh-keygen writes it."""
    key = Ed25519PrivateKey.generate()
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    private = ssh / "id_ed25519"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                          serialization.NoEncryption()))
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    (ssh / "id_ed25519.pub").write_text(f"{public.decode()} {comment}\n")
    return private


def test_invite_create_list_show_accept(people: People) -> None:
    alice, bob, anon = people("alice"), people("bob"), people("anon")
    alice.login(uniq("alice"))
    org = uniq("inv")
    alice.ok("orgs", "create", org, "--name", "Invite Co")

    text = alice.ok("invites", "create", org, "bob@example.com", "--role", "viewer")
    link = text.out.strip().splitlines()[-1]
    assert link.startswith(f"{alice.api_url}/invites/")
    listed = alice.ok("invites", "list", org, "--json").json()["invites"]
    assert [(i["email"], i["role"], i["state"]) for i in listed] == [("bob@example.com", "viewer", "pending")]
    assert "token" not in listed[0]
    assert "bob@example.com" in alice.ok("invites", "list", org).out

    # Anyone can look at an invite, by link or by token, without signing in.
    view = anon.ok("invites", "show", link, "--json").json()
    assert view["org"] == {"slug": org, "name": "Invite Co"} and view["role"] == "viewer"
    assert view["state"] == "pending"
    # A bare token may start with "-" (base64url): after "--" it is never read as an option.
    assert "Invite Co" in anon.ok("invites", "show", "--", link.rsplit("/", 1)[1]).out
    anon.fails("not_signed_in", "invites", "accept", link)

    bob_subject = uniq("bob")
    bob.login(bob_subject)
    accepted = bob.ok("invites", "accept", link, "--json").json()
    assert accepted["alreadyMember"] is False and accepted["org"]["slug"] == org
    assert any(o["slug"] == org and o["role"] == "viewer" for o in bob.ok("orgs", "list", "--json").json()["orgs"])
    bob.fails("invite_used", "invites", "accept", link)
    assert alice.ok("invites", "list", org, "--json").json() == {"invites": []}  # accepted: no longer listed


def test_invite_resend_revoke_and_errors(people: People) -> None:
    alice, carol = people("alice"), people("carol")
    alice.login(uniq("alice"))
    org = uniq("rev")
    alice.ok("orgs", "create", org)

    first = alice.ok("invites", "create", org, "carol@example.com", "--json").json()
    assert first["token"] and first["role"] == "member"
    again = alice.ok("invites", "create", org, "carol@example.com", "--role", "admin", "--json").json()
    assert again["id"] == first["id"] and again["token"] != first["token"] and again["role"] == "admin"

    revoked = alice.ok("invites", "revoke", org, "carol@example.com", "--json").json()
    assert revoked == {"revoked": True, "org": org, "id": first["id"]}
    assert alice.ok("invites", "list", org, "--json").json() == {"invites": []}
    alice.fails("not_found", "invites", "revoke", org, first["id"])

    carol.login(uniq("carol"))
    carol.fails("invite_revoked", "invites", "accept", "--", again["token"])
    carol.fails("not_found", "invites", "list", org)  # not a member: the org is not shown to exist
    carol.fails("bad_invite", "invites", "show", "https://example.com/not-an-invite/")


def test_access_tokens_create_use_list_revoke(cli: Cli) -> None:
    subject = uniq("pat")
    cli.login(subject)

    created = cli.ok("tokens", "create", "ci", "--expires-in-days", "30", "--json").json()
    pat = created["token"]
    assert pat.startswith("svc_pat_") and created["name"] == "ci" and created["expiresAt"]

    # The token works as SVC_TOKEN, but cannot mint more credentials.
    as_pat = cli.env(SVC_TOKEN=pat)
    assert cli.ok("whoami", "--json", env=as_pat).json()["user"]["subject"] == subject
    cli.fails("session_required", "tokens", "create", "more", env=as_pat)

    listed = cli.ok("tokens", "list", "--json").json()["tokens"]
    assert [(t["id"], t["name"], t["revokedAt"]) for t in listed] == [(created["id"], "ci", None)]
    text = cli.ok("tokens", "list").out
    assert "ci" in text and "active" in text and pat not in text

    shown = cli.ok("tokens", "create", "laptop")
    assert "not shown again" in shown.out
    second = shown.out.strip().splitlines()[-1]
    assert second.startswith("svc_pat_")
    assert cli.ok("whoami", "--json", env=cli.env(SVC_TOKEN=second)).json()["user"]["subject"] == subject

    assert cli.ok("tokens", "revoke", created["id"], "--json").json() == {"revoked": True, "id": created["id"]}
    cli.fails("unauthorized", "whoami", env=as_pat)
    assert "revoked" in cli.ok("tokens", "list").out
    cli.fails("not_found", "tokens", "revoke", "pat_does_not_exist")


def test_ssh_keys_add_list_remove(cli: Cli) -> None:
    cli.login(uniq("keys"))
    private = _ssh_key(cli.home, "me@laptop")

    added = cli.ok("keys", "add", "--json").json()  # default: ~/.ssh/id_ed25519.pub
    assert added["name"] == "me@laptop" and added["type"] == "ssh-ed25519"
    assert added["fingerprint"].startswith("SHA256:")

    keys = cli.ok("keys", "list", "--json").json()["sshKeys"]
    assert [k["id"] for k in keys] == [added["id"]]
    assert added["fingerprint"] in cli.ok("keys", "list").out
    cli.fails("ssh_key_exists", "keys", "add", str(private) + ".pub", "--name", "again")

    # A private key is refused before anything is sent; so is a missing file.
    cli.fails("private_key", "keys", "add", str(private))
    cli.fails("file_not_found", "keys", "add", str(cli.home / "nope.pub"))

    removed = cli.ok("keys", "remove", added["fingerprint"], "--json").json()
    assert removed == {"removed": True, "id": added["id"]}
    assert cli.ok("keys", "list", "--json").json() == {"sshKeys": []}
    assert "No SSH keys" in cli.ok("keys", "list").out

    again = cli.ok("keys", "add", "--name", "work")
    assert "work" in again.out
    cli.ok("keys", "remove", "work")
    cli.fails("not_found", "keys", "remove", "work")
