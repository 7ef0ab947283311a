"""The access policy API: GET/PUT .../access, the bypass secret, and what they do at the edge check."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select

from svc.adapters.edge.port import EdgeChange
from svc.adapters.edge.settings import edge_url
from svc.models import Project
from tests.access.helpers import Edge, add_member, audit_rows, make_site, set_mode
from tests.support.api import Svc, assert_error

SECRET_PASSWORD = "correct horse battery staple"


@pytest.fixture
async def edge(svc: Svc) -> AsyncIterator[Edge]:
    e = Edge(svc)
    yield e
    await e.aclose()


async def test_a_new_project_is_public_and_the_policy_round_trips(svc: Svc) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    r = await alice.client.get(site.access)
    assert r.status_code == 200
    assert r.json() == {"mode": "public", "hasPassword": False, "hasBypass": False}

    assert await set_mode(alice, site, "org") == {"mode": "org", "hasPassword": False, "hasBypass": False}
    assert (await alice.client.get(site.access)).json()["mode"] == "org"
    project = (await alice.client.get(f"/v1/orgs/{site.org}/projects/{site.name}")).json()
    assert project["accessMode"] == "org"

    policy = await set_mode(alice, site, "password", SECRET_PASSWORD)
    assert policy == {"mode": "password", "hasPassword": True, "hasBypass": False}
    # public and org keep the stored password, so going back to password needs none.
    assert await set_mode(alice, site, "public") == {"mode": "public", "hasPassword": True, "hasBypass": False}
    assert (await set_mode(alice, site, "password"))["mode"] == "password"
    assert (await alice.client.get(site.access)).json() == {"mode": "password", "hasPassword": True,
                                                             "hasBypass": False}


async def test_roles_viewer_reads_admin_writes(svc: Svc) -> None:
    alice = await svc.login("alice")
    assert (await alice.client.post("/v1/orgs", json={"slug": "acme"})).status_code == 201
    site = await make_site(alice, org="acme")  # a team org: a personal org has no other members
    viewer, member, stranger = await svc.login("vic"), await svc.login("meg"), await svc.login("sam")
    await add_member(alice, site.org, viewer, "viewer")
    await add_member(alice, site.org, member, "member")
    assert (await viewer.client.get(site.access)).status_code == 200
    for user in (viewer, member):
        assert_error(await user.client.put(site.access, json={"mode": "org"}), 403, "forbidden")
        assert_error(await user.client.post(site.access + "/bypass"), 403, "forbidden")
        assert_error(await user.client.delete(site.access + "/bypass"), 403, "forbidden")
    assert_error(await stranger.client.get(site.access), 404, "not_found")
    assert_error(await stranger.client.put(site.access, json={"mode": "org"}), 404, "not_found")
    assert_error(await alice.client.get(f"/v1/orgs/{site.org}/projects/nope/access"), 404, "not_found")
    assert_error(await svc.anon.get(site.access), 401, "unauthorized")
    assert (await alice.client.get(site.access)).json()["mode"] == "public"


async def _generation(svc: Svc, org_project: str) -> int:
    async with svc.ctx.db.transaction(write=False) as session:
        value = await session.scalar(select(Project.access_generation).where(Project.name == org_project))
        assert value is not None
        return value


async def test_bad_policy_input_is_400_and_changes_nothing(svc: Svc) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    before = await _generation(svc, site.name)
    bodies: list[object] = [
        {}, {"mode": "secret"}, {"mode": "PUBLIC"}, {"mode": None}, {"mode": 1},
        {"mode": "password", "password": "short"}, {"mode": "password", "password": "x" * 257},
        {"mode": "password", "password": 12345678}, {"mode": "org", "extra": True},
        {"mode": "password", "password": "nul\x00in-the-middle"}, ["public"],
    ]
    for body in bodies:
        assert_error(await alice.client.put(site.access, json=body), 400, "bad_request")
    # Password mode needs a password the first time.
    err = assert_error(await alice.client.put(site.access, json={"mode": "password"}), 400, "bad_request")
    assert "password" in err["message"]
    r = await alice.client.put(site.access, content=b"{nope", headers={"content-type": "application/json"})
    assert_error(r, 400, "bad_request")
    assert (await alice.client.get(site.access)).json() == {"mode": "public", "hasPassword": False,
                                                             "hasBypass": False}
    assert await _generation(svc, site.name) == before
    assert await audit_rows(svc) == []
    # The bounds themselves are accepted.
    assert (await set_mode(alice, site, "password", "p" * 8))["hasPassword"]
    assert (await set_mode(alice, site, "password", "p" * 256))["hasPassword"]


async def test_the_password_is_never_returned_logged_or_audited(svc: Svc, edge: Edge,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    alice = await svc.login("alice")
    site = await make_site(alice)
    r = await alice.client.put(site.access, json={"mode": "password", "password": SECRET_PASSWORD})
    assert r.status_code == 200 and SECRET_PASSWORD not in r.text
    assert SECRET_PASSWORD not in (await alice.client.get(site.access)).text
    assert SECRET_PASSWORD not in (await alice.client.get(f"/v1/orgs/{site.org}/projects/{site.name}")).text
    # A wrong guess, a right one, and a too-short password refused by validation.
    await edge.password(site.host, SECRET_PASSWORD + "?")
    await edge.sign_in_with_password(site.host, SECRET_PASSWORD)
    assert_error(await alice.client.put(site.access, json={"mode": "password", "password": "tiny"}), 400)
    rows = await audit_rows(svc)
    assert [(row.action, row.data, row.target) for row in rows] == [("access.set", {"mode": "password"}, site.name)]
    assert rows[0].actor_user_id == alice.id
    for secret in (SECRET_PASSWORD, "tiny"):
        assert not [rec for rec in caplog.records if secret in rec.getMessage()]
    assert [rec for rec in caplog.records if rec.name == "svc.access"]  # it did log, without the password
    # At rest: an argon2id hash, not the password.
    async with svc.ctx.db.transaction(write=False) as session:
        stored = await session.scalar(select(Project.access_password_hash).where(Project.name == site.name))
    assert stored is not None and stored.startswith("$argon2id$") and SECRET_PASSWORD not in stored


async def test_every_put_bumps_the_generation_so_old_cookies_stop_working(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "password", SECRET_PASSWORD)
    cookie = await edge.sign_in_with_password(site.host, SECRET_PASSWORD)
    assert (await edge.check(site.host, cookie=cookie)).status_code == 204
    before = await _generation(svc, site.name)
    # The same mode, no new password: still a new generation.
    await set_mode(alice, site, "password")
    assert await _generation(svc, site.name) == before + 1
    r = await edge.check(site.host, cookie=cookie, uri="/docs/")
    assert_error(r, 401, "unauthorized")
    assert r.headers["x-svc-login"] == f"{edge_url(svc.ctx.config, site.host)}/__svc/password?next=/docs/"
    fresh = await edge.sign_in_with_password(site.host, SECRET_PASSWORD)
    assert (await edge.check(site.host, cookie=fresh)).status_code == 204
    # Public lets everyone through; back to password, the cookie of the earlier generation is dead.
    await set_mode(alice, site, "public")
    assert (await edge.check(site.host)).status_code == 204
    await set_mode(alice, site, "password")
    assert_error(await edge.check(site.host, cookie=fresh), 401)


async def test_a_new_password_needs_the_new_password(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "password", SECRET_PASSWORD)
    await set_mode(alice, site, "password", "an entirely new one")
    assert (await edge.password(site.host, SECRET_PASSWORD)).status_code == 401
    assert (await edge.password(site.host, "an entirely new one")).status_code == 303
    # A password sent with another mode is stored too, ready for a switch back to password mode.
    assert await set_mode(alice, site, "org", "third password!") == {"mode": "org", "hasPassword": True,
                                                                     "hasBypass": False}
    await set_mode(alice, site, "password")
    assert (await edge.password(site.host, "an entirely new one")).status_code == 401
    assert (await edge.password(site.host, "third password!")).status_code == 303


async def test_bypass_secret_new_invalidates_old_and_revoke(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "org")
    r = await alice.client.post(site.access + "/bypass")
    assert r.status_code == 200
    assert set(r.json()) == {"secret"}
    first = r.json()["secret"]
    assert first.startswith("svc_byp_") and len(first) > 40
    assert (await alice.client.get(site.access)).json() == {"mode": "org", "hasPassword": False, "hasBypass": True}
    assert (await edge.check(site.host, bypass=first)).status_code == 204
    assert_error(await edge.check(site.host), 401)
    assert_error(await edge.check(site.host, bypass=first + "x"), 401)

    second = (await alice.client.post(site.access + "/bypass")).json()["secret"]
    assert second != first
    assert_error(await edge.check(site.host, bypass=first), 401)
    assert (await edge.check(site.host, bypass=second)).status_code == 204
    # The bypass works in password mode too.
    await set_mode(alice, site, "password", SECRET_PASSWORD)
    assert (await edge.check(site.host, bypass=second)).status_code == 204

    r = await alice.client.delete(site.access + "/bypass")
    assert r.status_code == 204 and r.content == b""
    assert_error(await edge.check(site.host, bypass=second), 401)
    assert (await alice.client.get(site.access)).json() == {"mode": "password", "hasPassword": True,
                                                             "hasBypass": False}
    # Again with none: still 204, the policy unchanged.
    assert (await alice.client.delete(site.access + "/bypass")).status_code == 204
    assert (await alice.client.get(site.access)).json()["mode"] == "password"

    rows = await audit_rows(svc, "access.bypass")
    assert sorted(row.action for row in rows) == ["access.bypass.new", "access.bypass.new",
                                                  "access.bypass.revoke", "access.bypass.revoke"]
    for row in rows:
        assert first not in str(row.data) and second not in str(row.data) and row.target == site.name


async def test_a_public_host_passes_the_check_and_an_unrouted_one_is_refused(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    assert (await edge.check(site.host)).status_code == 204
    # The check fails closed: a host that leads to no project passes nothing, with any credential
    # (the edge asks only about hosts it routes; one the API cannot resolve is refused).
    await set_mode(alice, site, "password", SECRET_PASSWORD)
    cookie = await edge.sign_in_with_password(site.host, SECRET_PASSWORD)
    for host in ("nothing-here.localhost", "nothing.invalid"):
        assert_error(await edge.check(host), 403, "host_not_routed")
        assert_error(await edge.check(host, cookie=cookie), 403, "host_not_routed")
    # The check needs the host nginx saw.
    assert_error(await edge.http.get("/v1/edge/check"), 400, "bad_request")
    assert_error(await edge.http.get("/v1/edge/check", headers={"x-svc-host": "bad host!"}), 400, "bad_request")


async def test_the_edge_endpoints_are_not_in_the_api_document(svc: Svc) -> None:
    paths = (await svc.anon.get("/v1/openapi.json")).json()["paths"]
    assert "/v1/orgs/{orgSlug}/projects/{projectName}/access" in paths
    assert "/v1/access/authorize" in paths
    assert not [p for p in paths if p.startswith("/v1/edge") or p.startswith("/access")]
    schemas = (await svc.anon.get("/v1/openapi.json")).json()["components"]["schemas"]
    assert {"AccessPolicy", "AccessBypass", "AccessAuthorize"} <= set(schemas)


class _ProbeEdge:
    """Stands in for this process's edge to see what follow() would read: the store as committed
    (a new transaction), at the moment the API asks, and which projects it is told to follow."""

    description = "probe"

    def __init__(self, svc: Svc, project: str) -> None:
        self.svc = svc
        self.project = project
        self.seen: list[tuple[str, int]] = []
        self.followed: list[frozenset[str]] = []

    async def converge_now(self) -> None:
        async with self.svc.ctx.db.transaction(write=False) as session:
            row = (await session.execute(select(Project.access_mode, Project.access_generation)
                                         .where(Project.name == self.project))).one()
        self.seen.append((row[0], row[1]))

    async def follow(self, change: EdgeChange) -> None:
        self.followed.append(change.project_ids)
        await self.converge_now()


async def test_the_edge_converges_after_the_change_is_committed(svc: Svc) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    probe = _ProbeEdge(svc, site.name)
    svc.ctx.edge = probe
    try:
        start = await _generation(svc, site.name)
        await set_mode(alice, site, "org")
        assert probe.seen == [("org", start + 1)]
        assert (await alice.client.post(site.access + "/bypass")).status_code == 200
        assert (await alice.client.delete(site.access + "/bypass")).status_code == 204
        assert probe.seen[1:] == [("org", start + 2), ("org", start + 3)]
        # A refused change converges nothing.
        assert_error(await alice.client.put(site.access, json={"mode": "password"}), 400)
        assert len(probe.seen) == 3
        assert probe.followed == [frozenset({site.project_id})] * 3
    finally:
        svc.ctx.edge = None
