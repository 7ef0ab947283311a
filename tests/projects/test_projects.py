from __future__ import annotations

import asyncio

from sqlalchemy import func, select

from svc.models import AuditEvent, Hostname, Project
from svc.settings import Settings
from tests.support.api import Svc, User, assert_error, running_svc, wait_operation
from tests.support.smtp import SmtpSink, eventually


async def _team(svc: Svc, slug: str = "acme") -> User:
    alice = await svc.login("alice")
    assert (await alice.client.post("/v1/orgs", json={"slug": slug})).status_code == 201
    return alice


async def test_create_issues_the_default_hostname(svc: Svc) -> None:
    alice = await _team(svc)
    r = await alice.client.post("/v1/orgs/acme/projects", json={"name": "web"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["name"] == "web" and body["org"] == "acme"
    assert body["hostname"] == "web-acme.localhost"
    assert body["url"] == "http://web-acme.localhost:8081"
    assert body["createdAt"].endswith("Z")
    listed = (await alice.client.get("/v1/orgs/acme/projects")).json()["projects"]
    assert [p["name"] for p in listed] == ["web"]
    detail = (await alice.client.get("/v1/orgs/acme/projects/web")).json()
    assert detail["liveDeployment"] is None and detail["hostnames"] == ["web-acme.localhost"]
    assert detail["accessMode"] == "public" and detail["state"] == "active"
    overview = (await alice.client.get("/v1/orgs/acme/projects/web/overview")).json()
    assert overview["serving"] is None and overview["recentDeployments"] == []
    assert overview["lastBackup"] is None
    assert overview["resources"]["db"] == {"declared": False, "provisioned": False}
    assert_error(await alice.client.get("/v1/orgs/acme/projects/nope"), 404, "not_found")


async def test_names_conflicts_and_roles(svc: Svc) -> None:
    alice = await _team(svc)
    for bad in ("", "Web", "-web", "web-", "w_b", "x" * 33, "web site"):
        assert_error(await alice.client.post("/v1/orgs/acme/projects", json={"name": bad}), 400, "bad_request")
    assert_error(await alice.client.post("/v1/orgs/acme/projects", json={"name": "a", "extra": 1}), 400)
    assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": "web"})).status_code == 201
    assert_error(await alice.client.post("/v1/orgs/acme/projects", json={"name": "web"}), 409, "project_name_taken")
    # "a-b" in org "ccc" and "a" in org "b-ccc" would share the hostname a-b-ccc.localhost.
    await alice.client.post("/v1/orgs", json={"slug": "ccc"})
    await alice.client.post("/v1/orgs", json={"slug": "b-ccc"})
    assert (await alice.client.post("/v1/orgs/ccc/projects", json={"name": "a-b"})).status_code == 201
    body = assert_error(await alice.client.post("/v1/orgs/b-ccc/projects", json={"name": "a"}), 409,
                        "hostname_taken")
    assert body["details"] == {"hostname": "a-b-ccc.localhost"}

    viewer = await svc.login("vic")
    await alice.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": "vic", "role": "viewer"})
    assert (await viewer.client.get("/v1/orgs/acme/projects/web")).status_code == 200
    assert_error(await viewer.client.post("/v1/orgs/acme/projects", json={"name": "v"}), 403, "forbidden")
    assert_error(await viewer.client.request("DELETE", "/v1/orgs/acme/projects/web", json={"confirm": "web"}),
                 403, "forbidden")
    stranger = await svc.login("mallory")
    assert_error(await stranger.client.get("/v1/orgs/acme/projects/web"), 404, "not_found")


async def test_plan_limit_holds_under_concurrent_creates(svc: Svc) -> None:
    alice = await _team(svc)
    results = await asyncio.gather(*[
        alice.client.post("/v1/orgs/acme/projects", json={"name": f"p{i}"}) for i in range(8)])
    statuses = sorted(r.status_code for r in results)
    assert statuses == [201] * 3 + [409] * 5, [r.text for r in results]
    refused = next(r for r in results if r.status_code == 409)
    assert_error(refused, 409, "project_limit")
    assert refused.json()["details"] == {"limit": 3, "count": 3, "plan": "free"}
    # What raises it, in the message: the operator's command and the setting.
    assert "svc admin plan acme pro" in refused.json()["message"]
    assert "SVC_FREE_PROJECT_LIMIT" in refused.json()["message"]
    async with svc.ctx.db.transaction(write=False) as s:
        org_projects = await s.scalar(select(func.count()).select_from(Project))
    assert org_projects == 3


async def test_delete_runs_a_teardown_operation(svc: Svc) -> None:
    alice = await _team(svc)
    await alice.client.post("/v1/orgs/acme/projects", json={"name": "web"})
    assert_error(await alice.client.request("DELETE", "/v1/orgs/acme/projects/web", json={"confirm": "we"}), 400)
    assert_error(await alice.client.request("DELETE", "/v1/orgs/acme/projects/web", json={}), 400)
    r = await alice.client.request("DELETE", "/v1/orgs/acme/projects/web", json={"confirm": "web"})
    assert r.status_code == 202, r.text
    op = await wait_operation(alice, "acme", r.json()["operationId"])
    assert op["phase"] == "done" and op["terminalCode"] == "ok" and op["kind"] == "teardown"
    assert op["finishedAt"] is not None
    assert_error(await alice.client.get("/v1/orgs/acme/projects/web"), 404, "not_found")
    async with svc.ctx.db.transaction(write=False) as s:
        assert await s.get(Hostname, "web-acme.localhost") is None
        actions = list((await s.scalars(select(AuditEvent.action).where(AuditEvent.org_slug == "acme"))).all())
    assert "project.delete" in actions
    # The name and hostname are free again.
    assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": "web"})).status_code == 201
    # Operations are org-scoped.
    bob = await svc.login("bob")
    assert_error(await bob.client.get(f"/v1/orgs/bob/operations/{op['id']}"), 404, "not_found")


async def test_org_with_projects_cannot_be_deleted(svc: Svc) -> None:
    alice = await _team(svc)
    for name in ("web", "api"):
        await alice.client.post("/v1/orgs/acme/projects", json={"name": name})
    body = assert_error(await alice.client.request("DELETE", "/v1/orgs/acme", json={"confirm": "acme"}), 409,
                        "org_not_empty")
    assert body["details"] == {"holdings": {"projects": {"count": 2, "names": ["api", "web"]}}}


async def test_second_delete_while_teardown_runs_is_op_in_flight(settings: Settings) -> None:
    # No workers: the teardown stays queued, so the operation is still running.
    async with running_svc(settings, run_workers=False) as svc:
        alice = await _team(svc)
        await alice.client.post("/v1/orgs/acme/projects", json={"name": "web"})
        r = await alice.client.request("DELETE", "/v1/orgs/acme/projects/web", json={"confirm": "web"})
        assert r.status_code == 202
        op = (await alice.client.get(f"/v1/orgs/acme/operations/{r.json()['operationId']}")).json()
        assert op["terminalCode"] is None and op["phase"] == "routing"
        assert_error(await alice.client.request("DELETE", "/v1/orgs/acme/projects/web", json={"confirm": "web"}),
                     409, "op_in_flight")
        detail = (await alice.client.get("/v1/orgs/acme/projects/web")).json()
        assert detail["state"] == "deleting"


async def test_reaching_the_project_limit_notifies_the_admins(mail_svc: Svc, sink: SmtpSink) -> None:
    """Spec: notifications record limit events; sentAt is set when an email also went out."""
    alice = await mail_svc.login("alice", email="alice@example.com", name="Alice")
    assert (await alice.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme"})).status_code == 201
    bob = await mail_svc.login("bob", email="bob@example.com")  # a member, not an admin: no mail
    r = await alice.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": "bob", "role": "member"})
    assert r.status_code == 201
    for name in ("p0", "p1"):
        assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": name})).status_code == 201
    assert (await bob.client.get("/v1/orgs/acme/notifications")).json() == {"notifications": []}
    assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": "p2"})).status_code == 201

    [note] = (await bob.client.get("/v1/orgs/acme/notifications")).json()["notifications"]
    assert note["kind"] == "limit.projects" and note["project"] is None
    assert note["data"] == {"resource": "projects", "limit": 3, "plan": "free"}
    assert "all 3 projects of the free plan" in note["message"]
    [received] = await sink.wait_for(1, to="alice@example.com")
    assert "projects limit reached" in received.message["Subject"] and "acme" in received.text

    async def sent() -> bool:
        notes = (await alice.client.get("/v1/orgs/acme/notifications")).json()["notifications"]
        return notes[0]["sentAt"] is not None

    await eventually(sent, what="the notification's sentAt")
    assert sink.to("bob@example.com") == []
    # Refused creates past the limit change nothing, so they record nothing either.
    assert_error(await alice.client.post("/v1/orgs/acme/projects", json={"name": "p3"}), 409, "project_limit")
    assert len((await alice.client.get("/v1/orgs/acme/notifications")).json()["notifications"]) == 1


async def test_a_name_whose_default_hostname_would_not_be_one_dns_label_is_refused(svc: Svc) -> None:
    """`{project}-{org}` is one DNS label (at most 63 characters), so the edge can serve it."""
    org = "o" * 32
    alice = await _team(svc, org)
    err = assert_error(await alice.client.post(f"/v1/orgs/{org}/projects", json={"name": "p" * 31}), 400,
                       "bad_request")
    assert err["details"] == {"maxLength": 30} and "at most 30 characters" in err["message"]
    assert (await alice.client.get(f"/v1/orgs/{org}/projects")).json()["projects"] == []
    r = await alice.client.post(f"/v1/orgs/{org}/projects", json={"name": "p" * 30})
    assert r.status_code == 201 and r.json()["hostname"] == f"{'p' * 30}-{org}.localhost"


async def test_a_project_being_deleted_can_be_seen_but_not_changed(settings: Settings) -> None:
    async with running_svc(settings, run_workers=False) as svc:  # no worker: the teardown waits
        alice = await _team(svc)
        assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": "web"})).status_code == 201
        base = "/v1/orgs/acme/projects/web"
        assert (await alice.client.put(f"{base}/secrets/KEY", json={"value": "v1"})).status_code == 200
        r = await alice.client.request("DELETE", base, json={"confirm": "web"})
        assert r.status_code == 202, r.text
        assert (await alice.client.get(base)).json()["state"] == "deleting"
        for method, path, body in [
            ("PUT", f"{base}/secrets/KEY", {"value": "v2"}),
            ("PUT", f"{base}/secrets/OTHER", {"value": "x"}),
            ("DELETE", f"{base}/secrets/KEY", None),
            ("PUT", f"{base}/access", {"mode": "password", "password": "long enough"}),
            ("POST", f"{base}/access/bypass", None),
            ("POST", f"{base}/rollback", {"version": 1}),
            ("DELETE", base, {"confirm": "web"}),
        ]:
            r = await alice.client.request(method, path, json=body)
            assert_error(r, 409, "op_in_flight")
        assert (await alice.client.get(f"{base}/access")).json()["mode"] == "public"
        async with svc.ctx.db.transaction(write=False) as s:
            changes = (await s.scalars(select(AuditEvent.action).where(
                AuditEvent.action.in_(["secret.set", "secret.delete", "access.set", "access.bypass.new"])))).all()
        assert list(changes) == ["secret.set"], "only the change made before the delete"
