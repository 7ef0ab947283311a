from __future__ import annotations

from sqlalchemy import select

from svc.models import AuditEvent
from tests.support.api import Svc, assert_error


async def test_create_rename_and_list_orgs(svc: Svc) -> None:
    alice = await svc.login("alice")
    r = await alice.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme Inc"})
    assert r.status_code == 201
    assert r.json()["slug"] == "acme" and r.json()["name"] == "Acme Inc" and r.json()["personal"] is False
    orgs = (await alice.client.get("/v1/orgs")).json()["orgs"]
    assert {o["slug"]: o["role"] for o in orgs} == {"alice": "admin", "acme": "admin"}

    r = await alice.client.patch("/v1/orgs/acme", json={"name": "Acme Corp"})
    assert r.status_code == 200
    assert r.json() == {"slug": "acme", "name": "Acme Corp", "role": "admin", "personal": False,
                        "plan": "free", "projectLimit": 3}
    # The slug is immutable: PATCH takes the display name only.
    assert_error(await alice.client.patch("/v1/orgs/acme", json={"slug": "other"}), 400, "bad_request")


async def test_org_slug_rules(svc: Svc) -> None:
    alice = await svc.login("alice")
    for slug in ("ab", "x" * 33, "Acme", "-acme", "acme-", "ac_me", "ac me", ""):
        assert_error(await alice.client.post("/v1/orgs", json={"slug": slug}), 400, "bad_request")
    assert (await alice.client.post("/v1/orgs", json={"slug": "a-1"})).status_code == 201
    bob = await svc.login("bob")
    body = assert_error(await bob.client.post("/v1/orgs", json={"slug": "a-1"}), 409, "org_slug_taken")
    assert body["details"] == {"slug": "a-1"}
    assert_error(await bob.client.post("/v1/orgs", json={"slug": "alice"}), 409, "org_slug_taken")
    assert_error(await bob.client.post("/v1/orgs", json={"slug": "zed", "name": "n" * 101}), 400)
    assert_error(await bob.client.post("/v1/orgs", json=["zed"]), 400, "bad_request")


async def test_non_members_get_404_and_roles_are_enforced(svc: Svc) -> None:
    alice = await svc.login("alice")
    await alice.client.post("/v1/orgs", json={"slug": "acme"})
    mallory = await svc.login("mallory")
    for path in ("/v1/orgs/acme/members", "/v1/orgs/acme/notifications", "/v1/orgs/nope/members"):
        assert_error(await mallory.client.get(path), 404, "not_found")
    assert_error(await mallory.client.patch("/v1/orgs/acme", json={"name": "x"}), 404)

    viewer = await svc.login("vic")
    r = await alice.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": "vic",
                                                                "role": "viewer"})
    assert r.status_code == 201
    assert (await viewer.client.get("/v1/orgs/acme/notifications")).status_code == 200
    body = assert_error(await viewer.client.get("/v1/orgs/acme/members"), 403, "forbidden")
    assert body["details"] == {"required": "member", "role": "viewer"}
    assert_error(await viewer.client.patch("/v1/orgs/acme", json={"name": "x"}), 403, "forbidden")


async def test_delete_org_rules_and_audit_survives(svc: Svc) -> None:
    alice = await svc.login("alice")
    await alice.client.post("/v1/orgs", json={"slug": "acme"})
    assert_error(await alice.client.request("DELETE", "/v1/orgs/acme", json={"confirm": "acm"}), 400)
    assert_error(await alice.client.request("DELETE", "/v1/orgs/acme", json={}), 400)
    assert_error(await alice.client.request("DELETE", "/v1/orgs/alice", json={"confirm": "alice"}), 409,
                 "personal_org")
    r = await alice.client.request("DELETE", "/v1/orgs/acme", json={"confirm": "  acme "})
    assert r.status_code == 204
    assert_error(await alice.client.get("/v1/orgs/acme/notifications"), 404)
    assert [o["slug"] for o in (await alice.client.get("/v1/orgs")).json()["orgs"]] == ["alice"]
    async with svc.ctx.db.transaction(write=False) as s:
        row = (await s.scalars(select(AuditEvent).where(AuditEvent.action == "org.delete"))).one()
    assert row.org_id is None and row.org_slug == "acme" and row.target == "acme"


async def test_notifications_are_listed_newest_first(svc: Svc) -> None:
    from svc.domains.notifications.service import notify
    from svc.domains.orgs.queries import org_by_slug

    alice = await svc.login("alice")
    async with svc.ctx.db.transaction() as s:
        org = await org_by_slug(s, "alice")
        assert org is not None
        for i in range(5):
            notify(s, org_id=org.id, kind="limit", message=f"event {i}")
            await s.flush()
    r = await alice.client.get("/v1/orgs/alice/notifications", params={"limit": 3})
    items = r.json()["notifications"]
    assert [n["message"] for n in items] == ["event 4", "event 3", "event 2"]
    assert items[0]["sentAt"] is None
    assert_error(await alice.client.get("/v1/orgs/alice/notifications", params={"limit": 0}), 400)
    assert_error(await alice.client.get("/v1/orgs/alice/notifications", params={"limit": "x"}), 400)
