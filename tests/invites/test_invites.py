"""Invites through the API (spec section 3 'Invite', section 4 rules 5-9), on both stores."""

from __future__ import annotations

import asyncio
from datetime import datetime

from svc.settings import Settings
from tests.invites.helpers import expire, invite, listed, org_with_admin
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.smtp import outbox

INVITE_KEYS = {"id", "email", "role", "state", "expiresAt", "sentAt", "createdAt"}


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_invite_lifecycle_create_list_preview_accept(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "  Bob@Example.COM ", "member")
    assert set(created) == INVITE_KEYS | {"token"}
    assert created["email"] == "bob@example.com"
    assert (created["role"], created["state"], created["sentAt"]) == ("member", "pending", None)
    assert (_at(created["expiresAt"]) - _at(created["createdAt"])).days == 7
    token = created["token"]

    [row] = await listed(alice)
    assert set(row) == INVITE_KEYS, "the token is shown once, in the create response only"
    assert row["id"] == created["id"] and row["state"] == "pending"

    r = await svc.anon.get(f"/v1/invites/{token}")
    assert r.status_code == 200
    assert r.json() == {"org": {"slug": "acme", "name": "Acme Inc"}, "role": "member", "state": "pending",
                        "expiresAt": created["expiresAt"]}

    # Any signed-in account may accept: no email match is required.
    bob = await svc.login("bob", email="robert@elsewhere.example.org")
    r = await bob.client.post(f"/v1/invites/{token}/accept")
    assert r.status_code == 200, r.text
    assert r.json() == {"alreadyMember": False, "org": {"slug": "acme", "name": "Acme Inc", "role": "member",
                                                        "personal": False, "plan": "free", "projectLimit": 3}}
    me = (await bob.client.get("/v1/me")).json()
    assert {"slug": "acme", "role": "member"}.items() <= next(o for o in me["orgs"] if o["slug"] == "acme").items()

    assert await listed(alice) == [], "accepted invites leave the list"
    assert (await svc.anon.get(f"/v1/invites/{token}")).json()["state"] == "used"
    carol = await svc.login("carol")
    assert_error(await carol.client.post(f"/v1/invites/{token}/accept"), 409, "invite_used")
    assert_error(await alice.client.delete(f"/v1/orgs/acme/invites/{created['id']}"), 404, "not_found")


async def test_revoke_hides_the_invite_and_stops_its_mail(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    other = await invite(alice, "carol@example.com")

    r = await alice.client.delete(f"/v1/orgs/acme/invites/{created['id']}")
    assert r.status_code == 204 and r.content == b""
    assert [i["id"] for i in await listed(alice)] == [other["id"]]
    assert (await svc.anon.get(f"/v1/invites/{created['token']}")).json()["state"] == "revoked"
    bob = await svc.login("bob")
    assert_error(await bob.client.post(f"/v1/invites/{created['token']}/accept"), 409, "invite_revoked")
    assert_error(await alice.client.delete(f"/v1/orgs/acme/invites/{created['id']}"), 404, "not_found")
    assert_error(await alice.client.delete("/v1/orgs/acme/invites/inv_nope"), 404, "not_found")
    # Another org's invite id is not found through this org.
    await alice.client.post("/v1/orgs", json={"slug": "other", "name": "Other"})
    assert_error(await alice.client.delete(f"/v1/orgs/other/invites/{other['id']}"), 404, "not_found")
    assert [i["id"] for i in await listed(alice)] == [other["id"]]
    assert [m for m in await outbox(svc) if m.invite_id == created["id"] and m.sent_at is None] == []


async def test_reinvite_reuses_the_row_with_a_new_token(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    first = await invite(alice, "bob@example.com", "viewer")
    again = await invite(alice, "BOB@example.com", "admin", status=200)
    assert again["id"] == first["id"]
    assert again["token"] != first["token"]
    assert (again["role"], again["state"], again["sentAt"]) == ("admin", "pending", None)
    assert _at(again["expiresAt"]) >= _at(first["expiresAt"])
    assert [i["id"] for i in await listed(alice)] == [first["id"]]

    assert_error(await svc.anon.get(f"/v1/invites/{first['token']}"), 404, "not_found")
    bob = await svc.login("bob")
    assert_error(await bob.client.post(f"/v1/invites/{first['token']}/accept"), 404, "not_found")
    r = await bob.client.post(f"/v1/invites/{again['token']}/accept")
    assert r.status_code == 200 and r.json()["org"]["role"] == "admin"


async def test_reinvite_after_revoke_or_accept_makes_it_pending_again(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    first = await invite(alice, "bob@example.com")
    await alice.client.delete(f"/v1/orgs/acme/invites/{first['id']}")
    again = await invite(alice, "bob@example.com", status=200)
    assert again["id"] == first["id"] and again["state"] == "pending"
    assert [i["id"] for i in await listed(alice)] == [first["id"]]
    # Accepted by an account with another address, so the address is still not a member's.
    dave = await svc.login("dave", email="dave@example.com")
    assert (await dave.client.post(f"/v1/invites/{again['token']}/accept")).status_code == 200
    third = await invite(alice, "bob@example.com", status=200)
    assert third["id"] == first["id"] and third["state"] == "pending"


async def test_expired_invite_is_listed_previewed_and_refused(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    await expire(svc, created["id"])

    [row] = await listed(alice)
    assert row["state"] == "expired"
    assert (await svc.anon.get(f"/v1/invites/{created['token']}")).json()["state"] == "expired"
    bob = await svc.login("bob")
    assert_error(await bob.client.post(f"/v1/invites/{created['token']}/accept"), 409, "invite_expired")
    assert "acme" not in [o["slug"] for o in (await bob.client.get("/v1/me")).json()["orgs"]]

    renewed = await invite(alice, "bob@example.com", status=200)
    assert renewed["state"] == "pending"
    assert (await bob.client.post(f"/v1/invites/{renewed['token']}/accept")).status_code == 200


async def test_an_expired_invite_can_be_revoked(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    await expire(svc, created["id"])
    assert (await alice.client.delete(f"/v1/orgs/acme/invites/{created['id']}")).status_code == 204
    assert await listed(alice) == []


async def test_pending_invite_cap(settings: Settings) -> None:
    async with running_svc(configured(settings, pending_invite_cap=3)) as svc:
        alice = await org_with_admin(svc)
        made = [await invite(alice, f"user{n}@example.com") for n in range(3)]
        r = await alice.client.post("/v1/orgs/acme/invites", json={"email": "user3@example.com", "role": "member"})
        body = assert_error(r, 409, "too_many_invites")
        assert body["details"] == {"limit": 3, "count": 3}
        assert len(await listed(alice)) == 3

        # Re-sending one of the three adds no pending invite, so it is allowed at the cap.
        await invite(alice, "user0@example.com", status=200)
        # Expired and revoked invites do not count.
        await expire(svc, made[1]["id"])
        await invite(alice, "user3@example.com")
        await alice.client.delete(f"/v1/orgs/acme/invites/{made[2]['id']}")
        await invite(alice, "user4@example.com")
        assert_error(await alice.client.post("/v1/orgs/acme/invites", json={"email": "user5@example.com"}),
                     409, "too_many_invites")
        # Re-inviting the expired address would make it count again: refused at the cap.
        assert_error(await alice.client.post("/v1/orgs/acme/invites", json={"email": "user1@example.com"}),
                     409, "too_many_invites")
        # The cap is per org.
        await alice.client.post("/v1/orgs", json={"slug": "second", "name": "Second"})
        await invite(alice, "user5@example.com", org="second")


async def test_inviting_a_member_is_already_member(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    bob = await svc.login("bob", email="Bob@Example.com")
    r = await alice.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": "bob", "role": "viewer"})
    assert r.status_code == 201
    for email in ("bob@example.com", " BOB@EXAMPLE.COM", "alice@example.com"):
        r = await alice.client.post("/v1/orgs/acme/invites", json={"email": email, "role": "admin"})
        assert_error(r, 409, "already_member")
    assert await listed(alice) == []

    # A member accepting an invite meant for another address keeps their role; the invite is used up.
    other = await invite(alice, "carol@example.com", "admin")
    r = await bob.client.post(f"/v1/invites/{other['token']}/accept")
    assert r.status_code == 200
    assert r.json()["alreadyMember"] is True and r.json()["org"]["role"] == "viewer"
    assert (await svc.anon.get(f"/v1/invites/{other['token']}")).json()["state"] == "used"
    members = (await alice.client.get("/v1/orgs/acme/members")).json()["members"]
    assert {m["user"]["subject"]: m["role"] for m in members} == {"alice": "admin", "bob": "viewer"}


async def test_roles_admin_only_and_outsiders_see_nothing(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "zed@example.com")
    for subject, role in (("bob", "member"), ("carol", "viewer")):
        await svc.login(subject)
        await alice.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": subject, "role": role})
    bob, carol, dave = (await svc.login("bob")), (await svc.login("carol")), (await svc.login("dave"))
    body = {"email": "x@example.com", "role": "member"}
    for user, status in ((bob, 403), (carol, 403), (dave, 404)):
        assert_error(await user.client.get("/v1/orgs/acme/invites"), status)
        assert_error(await user.client.post("/v1/orgs/acme/invites", json=body), status)
        assert_error(await user.client.delete(f"/v1/orgs/acme/invites/{created['id']}"), status)
    assert_error(await svc.anon.get("/v1/orgs/acme/invites"), 401, "unauthorized")
    assert_error(await svc.anon.post(f"/v1/invites/{created['token']}/accept"), 401, "unauthorized")
    assert_error(await svc.client("svc_ses_bogus").post(f"/v1/invites/{created['token']}/accept"), 401)
    assert [i["email"] for i in await listed(alice)] == ["zed@example.com"]
    assert (await svc.anon.get(f"/v1/invites/{created['token']}")).json()["state"] == "pending"


async def test_bad_input_is_400_and_changes_nothing(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    bodies: list[object] = [
        {}, {"role": "member"}, {"email": "nope", "role": "member"}, {"email": "a@b", "role": "member"},
        {"email": "bob@example.com", "role": "owner"}, {"email": "bob@example.com", "role": "member", "x": 1},
        {"email": "a" * 5000 + "@example.com", "role": "member"}, {"email": 5, "role": "member"},
        {"email": "Bob <bob@example.com>"}, {"email": "bob@example.com\r\nBcc: eve@example.com"},
        {"email": "bob@example.com, eve@example.com"}, {"email": ["bob@example.com"]}, [], "bob@example.com",
        {"email": "bob@example.com", "role": "member" * 1000},
    ]
    for body in bodies:
        assert_error(await alice.client.post("/v1/orgs/acme/invites", json=body), 400, "bad_request")
    r = await alice.client.post("/v1/orgs/acme/invites", content=b"{nope", headers={"content-type": "application/json"})
    assert_error(r, 400, "bad_request")
    assert_error(await svc.anon.get("/v1/invites/" + "x" * 500), 400, "bad_request")
    assert_error(await alice.client.post("/v1/invites/" + "x" * 500 + "/accept"), 400, "bad_request")
    assert_error(await alice.client.delete("/v1/orgs/acme/invites/" + "x" * 500), 400, "bad_request")
    assert_error(await alice.client.delete("/v1/orgs/acme/invites/inv%00x"), 400, "bad_request")
    assert_error(await svc.anon.get("/v1/invites/tok%00en"), 400, "bad_request")
    assert_error(await svc.anon.get("/v1/invites/not-a-token"), 404, "not_found")
    assert_error(await alice.client.post("/v1/invites/not-a-token/accept"), 404, "not_found")
    assert await listed(alice) == []
    assert await outbox(svc) == []


async def test_ten_concurrent_accepts_one_wins(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "team@example.com")
    users = [await svc.login(f"user{n}") for n in range(10)]
    responses = await asyncio.gather(*(u.client.post(f"/v1/invites/{created['token']}/accept") for u in users))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * 9, [r.text for r in responses]
    for r in responses:
        if r.status_code == 409:
            assert_error(r, 409, "invite_used")
    members = (await alice.client.get("/v1/orgs/acme/members")).json()["members"]
    assert len(members) == 2


async def test_preview_is_404_once_the_org_is_deleted(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    r = await alice.client.request("DELETE", "/v1/orgs/acme", json={"confirm": "acme"})
    assert r.status_code == 204, r.text
    assert_error(await svc.anon.get(f"/v1/invites/{created['token']}"), 404, "not_found")
    bob = await svc.login("bob")
    assert_error(await bob.client.post(f"/v1/invites/{created['token']}/accept"), 404, "not_found")


def test_an_invite_token_never_starts_with_a_dash() -> None:
    """Pasted after `svc invites accept`, such a token would be read as an option."""
    from svc.kit.tokens import new_invite_token

    assert not any(new_invite_token().startswith("-") for _ in range(2000))
