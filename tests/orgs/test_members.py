from __future__ import annotations

import asyncio

from sqlalchemy import select

from svc.models import AuditEvent
from tests.support.api import Svc, assert_error


async def _org_with(svc: Svc, admin_subject: str, slug: str, **members: str):  # type: ignore[no-untyped-def]
    admin = await svc.login(admin_subject)
    assert (await admin.client.post("/v1/orgs", json={"slug": slug})).status_code == 201
    users = {}
    for subject, role in members.items():
        users[subject] = await svc.login(subject)
        r = await admin.client.post(f"/v1/orgs/{slug}/members",
                                    json={"provider": "dev", "subject": subject, "role": role})
        assert r.status_code == 201, r.text
    return admin, users


async def test_add_member_rules(svc: Svc) -> None:
    alice, _ = await _org_with(svc, "alice", "acme")
    body = assert_error(await alice.client.post("/v1/orgs/acme/members",
                                                json={"provider": "dev", "subject": "ghost", "role": "member"}),
                        404, "user_not_found")
    assert body["details"] == {"provider": "dev", "subject": "ghost"}
    bob = await svc.login("bob", email="bob@example.com", name="Bob")
    r = await alice.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": "bob", "role": "member"})
    assert r.status_code == 201
    assert r.json()["user"] == {"id": bob.id, "provider": "dev", "subject": "bob", "email": "bob@example.com",
                                "name": "Bob"}
    assert r.json()["role"] == "member"
    assert_error(await alice.client.post("/v1/orgs/acme/members",
                                         json={"provider": "dev", "subject": "bob", "role": "admin"}),
                 409, "already_member")
    for bad in ({"provider": "dev", "subject": "bob", "role": "owner"}, {"provider": "dev", "role": "member"},
                {"provider": "dev", "subject": "b" * 201, "role": "member"}):
        assert_error(await alice.client.post("/v1/orgs/acme/members", json=bad), 400, "bad_request")
    members = (await bob.client.get("/v1/orgs/acme/members")).json()["members"]
    assert {m["user"]["subject"]: m["role"] for m in members} == {"alice": "admin", "bob": "member"}
    assert_error(await bob.client.post("/v1/orgs/acme/members",
                                       json={"provider": "dev", "subject": "alice", "role": "member"}), 403)


async def test_role_change_and_last_admin(svc: Svc) -> None:
    alice, users = await _org_with(svc, "alice", "acme", bob="member")
    bob = users["bob"]
    assert_error(await alice.client.put(f"/v1/orgs/acme/members/{alice.id}", json={"role": "member"}), 409,
                 "last_admin")
    r = await alice.client.put(f"/v1/orgs/acme/members/{bob.id}", json={"role": "admin"})
    assert r.status_code == 200 and r.json()["role"] == "admin"
    # With two admins, alice may demote herself; then bob is the last one.
    assert (await alice.client.put(f"/v1/orgs/acme/members/{alice.id}", json={"role": "viewer"})).status_code == 200
    assert_error(await bob.client.request("DELETE", f"/v1/orgs/acme/members/{bob.id}"), 409, "last_admin")
    assert_error(await bob.client.put("/v1/orgs/acme/members/usr_nobody", json={"role": "member"}), 404)
    assert_error(await bob.client.put(f"/v1/orgs/acme/members/{alice.id}", json={"role": "root"}), 400)
    async with svc.ctx.db.transaction(write=False) as s:
        actions = list((await s.scalars(select(AuditEvent.action).where(AuditEvent.org_slug == "acme")
                                        .order_by(AuditEvent.at))).all())
    assert actions == ["member.add", "member.role", "member.role"]


async def test_remove_and_leave(svc: Svc) -> None:
    alice, users = await _org_with(svc, "alice", "acme", bob="member", carol="viewer")
    bob, carol = users["bob"], users["carol"]
    # A non-admin cannot remove others, but anyone may leave.
    assert_error(await bob.client.delete(f"/v1/orgs/acme/members/{carol.id}"), 403, "forbidden")
    assert (await carol.client.delete(f"/v1/orgs/acme/members/{carol.id}")).status_code == 204
    assert_error(await carol.client.get("/v1/orgs/acme/notifications"), 404)
    assert (await alice.client.delete(f"/v1/orgs/acme/members/{bob.id}")).status_code == 204
    assert_error(await alice.client.delete(f"/v1/orgs/acme/members/{bob.id}"), 404)
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.execute(select(AuditEvent.action, AuditEvent.target)
                                .where(AuditEvent.action.in_(["member.leave", "member.remove"])))).all()
    assert sorted(rows) == [("member.leave", carol.id), ("member.remove", bob.id)]


async def test_two_admins_demoting_each_other_at_once_leave_one_admin(svc: Svc) -> None:
    for round_ in range(5):
        slug = f"race-{round_}"
        alice, users = await _org_with(svc, f"alice{round_}", slug, **{f"bob{round_}": "admin"})
        bob = users[f"bob{round_}"]
        results = await asyncio.gather(
            alice.client.put(f"/v1/orgs/{slug}/members/{bob.id}", json={"role": "member"}),
            bob.client.put(f"/v1/orgs/{slug}/members/{alice.id}", json={"role": "member"}),
        )
        statuses = sorted(r.status_code for r in results)
        # The loser sees either the rule (409 last_admin) or, if the winner committed first, that it is
        # no longer an admin (403): never two demotions.
        assert statuses[0] == 200 and statuses[1] in (403, 409), [r.text for r in results]
        members = (await alice.client.get(f"/v1/orgs/{slug}/members")).json()["members"]
        assert [m["role"] for m in members].count("admin") == 1


async def test_two_admins_removing_each_other_at_once_leave_one_admin(svc: Svc) -> None:
    alice, users = await _org_with(svc, "alice", "acme", bob="admin")
    bob = users["bob"]
    results = await asyncio.gather(
        alice.client.delete(f"/v1/orgs/acme/members/{alice.id}"),
        bob.client.delete(f"/v1/orgs/acme/members/{bob.id}"),
    )
    assert sorted(r.status_code for r in results) == [204, 409]
    members = (await (alice if results[1].status_code == 204 else bob).client.get("/v1/orgs/acme/members"))
    assert [m["role"] for m in members.json()["members"]] == ["admin"]


async def test_a_personal_org_stays_a_one_person_org(svc: Svc) -> None:
    """Spec: every account has a personal org, a one-person org. Nobody can be added or invited to
    it, so its owner can never hand it over, leave it, or end up without one."""
    alice = await svc.login("alice")
    bob = await svc.login("bob")
    personal = alice.personal_org
    assert_error(await alice.client.post(f"/v1/orgs/{personal}/members",
                                         json={"provider": "dev", "subject": "bob", "role": "admin"}),
                 409, "personal_org")
    assert_error(await alice.client.post(f"/v1/orgs/{personal}/invites",
                                         json={"email": "bob@example.com", "role": "member"}),
                 409, "personal_org")
    members = (await alice.client.get(f"/v1/orgs/{personal}/members")).json()["members"]
    assert [m["user"]["subject"] for m in members] == ["alice"]
    assert (await alice.client.get(f"/v1/orgs/{personal}/invites")).json()["invites"] == []
    assert_error(await alice.client.delete(f"/v1/orgs/{personal}/members/{alice.id}"), 409, "last_admin")
    assert_error(await bob.client.get(f"/v1/orgs/{personal}/members"), 404)
    me = (await alice.client.get("/v1/me")).json()
    assert [o["slug"] for o in me["orgs"] if o["personal"]] == [personal]
