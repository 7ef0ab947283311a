"""Deploy, list, rollback, roles and git provenance through the API (both state stores)."""

from __future__ import annotations

import asyncio
import hashlib
import json

from sqlalchemy import select

from svc.domains.deployments.artifacts import blob_key, site_dir
from svc.models import AuditEvent
from svc.settings import Settings
from tests.deployments.conftest import Env, make_env
from tests.support import bundles
from tests.support.api import assert_error, running_svc


async def test_deploy_goes_live_and_is_listed_newest_first(env: Env) -> None:
    body = bundles.site(svc_json={"name": "web", "db": True, "custom": {"kept": 1}})
    r = await env.deploy(body)
    assert r.status_code == 201, r.text
    first = r.json()
    assert first["version"] == 1 and first["live"] is True and first["uploader"] == "alice"
    assert first["digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
    assert first["sizeBytes"] == len(body) and first["fileCount"] == 3
    assert first["git"] == {"commit": None, "message": None, "branch": None, "dirty": None}

    # Unpacked once under the digest's site dir, which the edge serves.
    site = site_dir(env.svc.ctx, first["digest"])
    assert (site / "assets" / "index.html").read_bytes() == b"<!doctype html><h1>hello</h1>\n"
    assert json.loads((site / "svc.json").read_text())["custom"] == {"kept": 1}
    blobs = env.svc.ctx.adapters.blobs
    assert blobs is not None and await blobs.exists(blob_key(first["digest"]))

    second_body = bundles.site({"assets/index.html": b"v2"})
    r = await env.deploy(second_body)
    assert r.status_code == 201, r.text
    assert r.json()["version"] == 2

    listed = (await env.deployments())["deployments"]
    assert [(d["version"], d["live"]) for d in listed] == [(2, True), (1, False)]
    assert listed[1] == {**first, "live": False}

    # The project shows the live deployment and keeps the manifest of the live bundle.
    detail = (await env.owner.client.get(env.base)).json()
    assert detail["liveDeployment"]["version"] == 2
    overview = (await env.owner.client.get(f"{env.base}/overview")).json()
    assert overview["resources"]["db"]["declared"] is False


async def test_same_digest_twice_makes_two_versions_sharing_one_site(env: Env) -> None:
    body = bundles.site()
    one = (await env.deploy(body)).json()
    two = (await env.deploy(body)).json()
    assert (one["version"], two["version"]) == (1, 2)
    assert one["digest"] == two["digest"] and one["id"] != two["id"]
    sites = [p.name for p in (env.data_dir / "sites").iterdir()]
    assert sites == [one["digest"].removeprefix("sha256:")]


async def test_rollback_moves_the_live_pointer_only(env: Env) -> None:
    v1 = (await env.deploy(bundles.site(svc_json={"db": True}))).json()
    v2 = (await env.deploy(bundles.site({"assets/index.html": b"two"}))).json()
    r = await env.owner.client.post(f"{env.base}/rollback", json={"version": 1})
    assert r.status_code == 200, r.text
    assert r.json() == {**v1, "live": True}

    listed = (await env.deployments())["deployments"]
    assert [(d["version"], d["live"]) for d in listed] == [(2, False), (1, True)]  # no new version
    detail = (await env.owner.client.get(env.base)).json()
    assert detail["liveDeployment"]["version"] == 1
    overview = (await env.owner.client.get(f"{env.base}/overview")).json()
    assert overview["resources"]["db"]["declared"] is True  # the live bundle's svc.json

    # "Back" to a newer version is a pointer move too; the next upload is version 3.
    assert (await env.owner.client.post(f"{env.base}/rollback", json={"version": 2})).json()["id"] == v2["id"]
    assert (await env.deploy(bundles.site())).json()["version"] == 3

    body = assert_error(await env.owner.client.post(f"{env.base}/rollback", json={"version": 9}), 404, "not_found")
    assert body["details"] == {"version": 9}
    for bad in ({}, {"version": 0}, {"version": "x"}, {"version": 2**40}, {"version": 1, "extra": 1}, [1]):
        assert_error(await env.owner.client.post(f"{env.base}/rollback", json=bad), 400, "bad_request")
    assert_error(await env.owner.client.post(f"/v1/orgs/{env.org}/projects/nope/rollback", json={"version": 1}),
                 404, "not_found")
    listed = (await env.deployments())["deployments"]
    assert [(d["version"], d["live"]) for d in listed] == [(3, True), (2, False), (1, False)]
    async with env.svc.ctx.db.transaction(write=False) as s:
        events = (await s.execute(select(AuditEvent.action, AuditEvent.data).where(
            AuditEvent.action.like("deployment.%")).order_by(AuditEvent.at, AuditEvent.id))).all()
    assert [(a, d["version"]) for a, d in events] == [
        ("deployment.create", 1), ("deployment.create", 2), ("deployment.rollback", 1),
        ("deployment.rollback", 2), ("deployment.create", 3)]


async def test_roles_viewer_lists_member_deploys(env: Env) -> None:
    await env.deploy(bundles.site())
    viewer = await env.svc.login("vic")
    member = await env.svc.login("mo")
    for who, role in ((viewer, "viewer"), (member, "member")):
        r = await env.owner.client.post(f"/v1/orgs/{env.org}/members",
                                        json={"provider": "dev", "subject": who.subject, "role": role})
        assert r.status_code == 201, r.text
    assert len((await env.deployments(viewer.client))["deployments"]) == 1
    body = assert_error(await env.deploy(bundles.site(), client=viewer.client), 403, "forbidden")
    assert body["details"] == {"required": "member", "role": "viewer"}
    assert_error(await viewer.client.post(f"{env.base}/rollback", json={"version": 1}), 403, "forbidden")

    r = await env.deploy(bundles.site({"assets/a.txt": b"a"}), client=member.client)
    assert r.status_code == 201 and r.json()["uploader"] == "mo"
    assert (await member.client.post(f"{env.base}/rollback", json={"version": 1})).status_code == 200

    stranger = await env.svc.login("mallory")
    assert_error(await env.deploy(bundles.site(), client=stranger.client), 404, "not_found")
    assert_error(await stranger.client.get(f"{env.base}/deployments"), 404, "not_found")
    assert_error(await env.deploy(bundles.site(), client=env.svc.anon), 401, "unauthorized")
    assert await env.rows() == 2


async def test_git_provenance_is_shown_and_validated(env: Env) -> None:
    headers = {
        "X-Svc-Git-Commit": "ABCDEF0123456789abcdef0123456789abcdef01",
        "X-Svc-Git-Message": "Fix%20the%20caf%C3%A9%20menu%0Asecond%20line%20is%20dropped",
        "X-Svc-Git-Branch": "feature%2Fcaf%C3%A9",
        "X-Svc-Git-Dirty": "true",
    }
    r = await env.deploy(bundles.site(), headers=headers)
    assert r.status_code == 201, r.text
    assert r.json()["git"] == {"commit": "abcdef0123456789abcdef0123456789abcdef01",
                               "message": "Fix the café menu", "branch": "feature/café", "dirty": True}
    assert (await env.deployments())["deployments"][0]["git"] == r.json()["git"]

    long = (await env.deploy(bundles.site(), headers={"X-Svc-Git-Message": "x" * 300,
                                                      "X-Svc-Git-Branch": "b" * 300,
                                                      "X-Svc-Git-Dirty": "false"})).json()
    assert long["git"]["message"] == "x" * 200 and long["git"]["branch"] == "b" * 255
    assert long["git"]["dirty"] is False

    for name, value in (("X-Svc-Git-Commit", "abc12"), ("X-Svc-Git-Commit", "g" * 40),
                        ("X-Svc-Git-Commit", "a" * 65), ("X-Svc-Git-Dirty", "yes"), ("X-Svc-Git-Dirty", "")):
        body = assert_error(await env.deploy(bundles.site(), headers={name: value}), 400, "bad_request")
        assert body["details"] == {"header": name}, (name, value)
    assert await env.rows() == 2


async def test_list_pages_newest_first(env: Env) -> None:
    for i in range(5):
        assert (await env.deploy(bundles.site({"assets/i": str(i).encode()}))).status_code == 201
    page = await env.deployments(limit=2)
    assert [d["version"] for d in page["deployments"]] == [5, 4] and page["nextCursor"] == "4"
    page = await env.deployments(limit=2, cursor=page["nextCursor"])
    assert [d["version"] for d in page["deployments"]] == [3, 2] and page["nextCursor"] == "2"
    page = await env.deployments(limit=2, cursor=page["nextCursor"])
    assert [d["version"] for d in page["deployments"]] == [1] and page["nextCursor"] is None
    # `before`, the cursor's earlier name, still works.
    assert [d["version"] for d in (await env.deployments(limit=2, before="4"))["deployments"]] == [3, 2]
    for params in ({"limit": 0}, {"limit": 101}, {"cursor": 0}, {"cursor": "x"}, {"cursor": 2**40}, {"before": 0},
                   {"page": 2}):
        assert_error(await env.owner.client.get(f"{env.base}/deployments", params=params), 400, "bad_request")


async def test_content_type_must_be_a_bundle_type(env: Env) -> None:
    body = bundles.site()
    for ctype in ("application/x-gzip", "application/octet-stream", "application/gzip; charset=binary"):
        assert (await env.deploy(body, content_type=ctype)).status_code == 201, ctype
    for ctype in ("application/json", "text/plain", "multipart/form-data; boundary=x", ""):
        refused = assert_error(await env.deploy(body, content_type=ctype), 415, "unsupported_media_type")
        assert "application/gzip" in refused["details"]["accepted"]
    assert await env.rows() == 3


async def test_no_deploy_or_rollback_while_the_project_is_being_deleted(settings: Settings) -> None:
    # Without workers the teardown stays at its first phase: the project is 'deleting'.
    async with running_svc(settings, run_workers=False) as svc:
        env = await make_env(svc)
        await env.deploy(bundles.site())
        r = await env.owner.client.request("DELETE", env.base, json={"confirm": env.project})
        assert r.status_code == 202, r.text
        before = env.files()
        assert_error(await env.deploy(bundles.site({"assets/x": b"x"})), 409, "op_in_flight")
        assert_error(await env.owner.client.post(f"{env.base}/rollback", json={"version": 1}), 409, "op_in_flight")
        assert env.files() == before and await env.rows() == 1


async def test_concurrent_uploads_get_distinct_versions(env: Env) -> None:
    bodies = [bundles.site({"assets/index.html": f"v{i}".encode()}) for i in range(6)]
    bodies.append(bodies[0])  # the same digest twice, at once
    results = await asyncio.gather(*(env.deploy(b) for b in bodies))
    assert all(r.status_code == 201 for r in results), [r.text for r in results]
    assert sorted(r.json()["version"] for r in results) == list(range(1, 8))
    listed = (await env.deployments())["deployments"]
    assert [d["version"] for d in listed] == list(range(7, 0, -1))
    assert sum(d["live"] for d in listed) == 1 and listed[0]["live"]
    assert len(list((env.data_dir / "sites").iterdir())) == 6
