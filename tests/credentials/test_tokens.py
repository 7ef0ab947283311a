"""Personal access tokens: /v1/me/tokens, and the tokens as Bearer credentials."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from svc.domains.credentials.service import MAX_ACTIVE_TOKENS
from svc.kit.clock import utcnow
from svc.kit.tokens import new_personal_access_token, token_hash
from svc.models import AccessToken, AuditEvent
from tests.support.api import Svc, assert_error

TOKEN_FIELDS = {"id", "name", "hint", "createdAt", "expiresAt", "revokedAt", "lastUsedAt", "project", "readOnly"}


async def test_token_lifecycle(svc: Svc, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    alice = await svc.login("alice")
    assert (await alice.client.get("/v1/me/tokens")).json() == {"tokens": []}

    r = await alice.client.post("/v1/me/tokens", json={"name": "  laptop  "})
    assert r.status_code == 201, r.text
    created = r.json()
    assert set(created) == TOKEN_FIELDS | {"token"}
    token = created["token"]
    assert token.startswith("svc_pat_") and len(token) == len("svc_pat_") + 38
    assert created["name"] == "laptop"
    assert created["hint"] == token[:12] + "…"
    assert created["expiresAt"] is None and created["revokedAt"] is None and created["lastUsedAt"] is None
    assert created["createdAt"].endswith("Z")

    # The token signs in as alice, on /v1/me and on org routes.
    pat = svc.client(token)
    me = await pat.get("/v1/me")
    assert me.status_code == 200 and me.json()["user"]["id"] == alice.id
    orgs = await pat.get("/v1/orgs")
    assert orgs.status_code == 200 and [o["slug"] for o in orgs.json()["orgs"]] == ["alice"]
    assert (await pat.post("/v1/orgs", json={"slug": "acme-pat"})).status_code == 201

    second = (await alice.client.post("/v1/me/tokens", json={"name": "ci", "expiresInDays": 30})).json()
    listed = (await alice.client.get("/v1/me/tokens")).json()["tokens"]
    assert [t["id"] for t in listed] == [created["id"], second["id"]]
    assert all(set(t) == TOKEN_FIELDS for t in listed)
    assert listed[0] == {k: v for k, v in created.items() if k != "token"}

    # Revoke: 204, the row stays listed with revokedAt, and the token stops working at once.
    r = await alice.client.delete(f"/v1/me/tokens/{created['id']}")
    assert r.status_code == 204 and r.content == b""
    assert_error(await pat.get("/v1/me"), 401, "unauthorized")
    listed = (await alice.client.get("/v1/me/tokens")).json()["tokens"]
    revoked = next(t for t in listed if t["id"] == created["id"])
    assert revoked["revokedAt"] is not None and revoked["revokedAt"].endswith("Z")
    assert next(t for t in listed if t["id"] == second["id"])["revokedAt"] is None

    # Revoking again is idempotent and keeps the first revokedAt.
    assert (await alice.client.delete(f"/v1/me/tokens/{created['id']}")).status_code == 204
    again = (await alice.client.get("/v1/me/tokens")).json()["tokens"]
    assert next(t for t in again if t["id"] == created["id"])["revokedAt"] == revoked["revokedAt"]
    assert_error(await alice.client.delete("/v1/me/tokens/pat_nope"), 404, "not_found")

    # The plaintext appeared only in the create responses: not in lists, audit rows or logs.
    body = (await alice.client.get("/v1/me/tokens")).text
    assert token not in body and second["token"] not in body and token_hash(token) not in body
    async with svc.ctx.db.transaction(write=False) as s:
        audit = [(a.action, a.target, a.data) for a in (await s.scalars(select(AuditEvent))).all()]
    assert token not in repr(audit) and second["token"] not in repr(audit)
    assert token not in caplog.text and second["token"] not in caplog.text


async def test_expires_in_days_sets_expiry_and_an_expired_token_is_refused(svc: Svc) -> None:
    alice = await svc.login("alice")
    before = utcnow()
    created = (await alice.client.post("/v1/me/tokens", json={"name": "short", "expiresInDays": 7})).json()
    assert created["expiresAt"] is not None
    expires = (await alice.client.get("/v1/me/tokens")).json()["tokens"][0]["expiresAt"]
    assert expires == created["expiresAt"]
    pat = svc.client(created["token"])
    assert (await pat.get("/v1/me")).status_code == 200

    async with svc.ctx.db.transaction() as s:
        row = await s.get(AccessToken, created["id"])
        assert row is not None and row.expires_at is not None
        assert timedelta(days=7) - timedelta(minutes=1) < row.expires_at - before < timedelta(days=7, minutes=1)
        await s.execute(update(AccessToken).where(AccessToken.id == created["id"])
                        .values(expires_at=utcnow() - timedelta(seconds=1)))
    assert_error(await pat.get("/v1/me"), 401, "unauthorized")
    assert_error(await pat.get("/v1/me/tokens"), 401, "unauthorized")


async def test_a_token_cannot_mint_credentials_but_can_list_and_revoke(svc: Svc) -> None:
    alice = await svc.login("alice")
    created = (await alice.client.post("/v1/me/tokens", json={"name": "ci"})).json()
    pat = svc.client(created["token"])
    assert_error(await pat.post("/v1/me/tokens", json={"name": "more"}), 401, "session_required")
    assert_error(await pat.post("/v1/me/ssh-keys", json={"name": "k", "publicKey": "ssh-ed25519 AAAA"}),
                 401, "session_required")
    listed = await pat.get("/v1/me/tokens")
    assert listed.status_code == 200 and [t["id"] for t in listed.json()["tokens"]] == [created["id"]]
    assert (await pat.get("/v1/me/ssh-keys")).json() == {"sshKeys": []}
    # A token may revoke itself; it stops working with the next request.
    assert (await pat.delete(f"/v1/me/tokens/{created['id']}")).status_code == 204
    assert_error(await pat.get("/v1/me/tokens"), 401, "unauthorized")


async def test_bad_and_unknown_tokens_are_401(svc: Svc) -> None:
    alice = await svc.login("alice")
    token = (await alice.client.post("/v1/me/tokens", json={"name": "ci"})).json()["token"]
    last = token[-1]
    bad_checksum = token[:-1] + ("A" if last != "A" else "B")
    assert_error(await svc.client(bad_checksum).get("/v1/me"), 401, "unauthorized")
    never_issued = new_personal_access_token()  # well-formed, checksum right, not in the store
    assert_error(await svc.client(never_issued).get("/v1/me"), 401, "unauthorized")
    assert_error(await svc.client(token + "x").get("/v1/me"), 401, "unauthorized")
    assert_error(await svc.anon.get("/v1/me/tokens"), 401, "unauthorized")
    assert_error(await svc.anon.post("/v1/me/tokens", json={"name": "x"}), 401, "unauthorized")
    assert_error(await svc.anon.delete("/v1/me/tokens/pat_x"), 401, "unauthorized")
    assert (await svc.client(token).get("/v1/me")).status_code == 200


async def test_other_users_cannot_see_or_revoke_my_tokens(svc: Svc) -> None:
    alice = await svc.login("alice")
    bob = await svc.login("bob")
    created = (await alice.client.post("/v1/me/tokens", json={"name": "mine"})).json()
    assert (await bob.client.get("/v1/me/tokens")).json() == {"tokens": []}
    assert_error(await bob.client.delete(f"/v1/me/tokens/{created['id']}"), 404, "not_found")
    bob_pat = (await bob.client.post("/v1/me/tokens", json={"name": "bob"})).json()["token"]
    assert_error(await svc.client(bob_pat).delete(f"/v1/me/tokens/{created['id']}"), 404, "not_found")
    assert (await svc.client(created["token"]).get("/v1/me")).json()["user"]["id"] == alice.id
    assert [t["revokedAt"] for t in (await alice.client.get("/v1/me/tokens")).json()["tokens"]] == [None]


async def test_bad_create_bodies_are_400_and_create_nothing(svc: Svc) -> None:
    alice = await svc.login("alice")
    bodies: list[object] = [
        {}, {"name": ""}, {"name": "   "}, {"name": "x" * 101}, {"name": 5}, {"name": "a", "extra": 1},
        {"name": "a", "expiresInDays": 0}, {"name": "a", "expiresInDays": 3651}, {"name": "a", "expiresInDays": -1},
        {"name": "a", "expiresInDays": "30"}, {"name": "a", "expiresInDays": 1.5}, {"name": "a", "expiresInDays": True},
        {"name": "a", "expires_in_days": 3},  # only the contract's camelCase names are fields
        {"name": "\u000b" + "x" * 100},  # over the stated 100 even though 100 once trimmed
        [], "name",
    ]
    for body in bodies:
        assert_error(await alice.client.post("/v1/me/tokens", json=body), 400, "bad_request")
    r = await alice.client.post("/v1/me/tokens", content=b"{nope", headers={"content-type": "application/json"})
    assert assert_error(r, 400, "bad_request")["details"]["errors"] == [
        {"field": "body", "reason": "json_invalid", "message": "The body is not valid JSON"}]
    assert_error(await alice.client.delete("/v1/me/tokens/" + "x" * 65), 400, "bad_request")
    assert (await alice.client.get("/v1/me/tokens")).json() == {"tokens": []}
    r = await alice.client.post("/v1/me/tokens", json={"name": "x" * 100, "expiresInDays": 3650})
    assert r.status_code == 201
    r = await alice.client.post("/v1/me/tokens", json={"name": "n", "expiresInDays": None})
    assert r.status_code == 201 and r.json()["expiresAt"] is None
    # 30.0 is the integer 30 in JSON (as the schema says; schemathesis sends such numbers).
    r = await alice.client.post("/v1/me/tokens", json={"name": "f", "expiresInDays": 30.0})
    assert r.status_code == 201 and r.json()["expiresAt"] is not None


async def test_active_tokens_are_capped(svc: Svc) -> None:
    alice = await svc.login("alice")
    ids = []
    for n in range(MAX_ACTIVE_TOKENS):
        r = await alice.client.post("/v1/me/tokens", json={"name": f"t{n}"})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    body = assert_error(await alice.client.post("/v1/me/tokens", json={"name": "one more"}), 409, "too_many_tokens")
    assert body["details"] == {"limit": MAX_ACTIVE_TOKENS, "count": MAX_ACTIVE_TOKENS}
    assert len((await alice.client.get("/v1/me/tokens")).json()["tokens"]) == MAX_ACTIVE_TOKENS
    # Revoked tokens do not count; another user has a cap of their own.
    assert (await alice.client.delete(f"/v1/me/tokens/{ids[0]}")).status_code == 204
    assert (await alice.client.post("/v1/me/tokens", json={"name": "replacement"})).status_code == 201
    assert_error(await alice.client.post("/v1/me/tokens", json={"name": "again"}), 409, "too_many_tokens")
    bob = await svc.login("bob")
    assert (await bob.client.post("/v1/me/tokens", json={"name": "bob"})).status_code == 201
