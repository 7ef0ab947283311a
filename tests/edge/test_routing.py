"""The routing table (read from the store) and the edge built from it, on SQLite and PostgreSQL."""

from __future__ import annotations

from svc.domains.deployments import artifacts
from svc.edge.component import EdgeRouting
from svc.edge.routes import Entry, Kind
from tests.edge.conftest import started_edge
from tests.edge.helpers import FakeCheck, create_project, deploy, set_access
from tests.support.api import Svc, assert_error


async def test_routing_table_drives_the_edge(svc: Svc, check: FakeCheck) -> None:
    alice = await svc.login("alice")
    bob = await svc.login("bob")
    web = await create_project(alice, "web")
    empty = await create_project(alice, "empty")
    locked = await create_project(alice, "locked")
    gone = await create_project(alice, "gone")
    other = await create_project(bob, "web")
    await deploy(svc.ctx, web, {"index.html": b"alice web"})
    await deploy(svc.ctx, locked, {"index.html": b"locked"})
    await deploy(svc.ctx, gone, {"index.html": b"gone"})
    await deploy(svc.ctx, other, {"index.html": b"bob web"})
    await set_access(svc.ctx, locked, "password")
    r = await alice.client.request("DELETE", f"/v1/orgs/{gone.org}/projects/gone", json={"confirm": "gone"})
    assert r.status_code == 202

    routes = {r.host: r for r in await EdgeRouting(svc.ctx).routes()}
    assert set(routes) == {web.host, empty.host, locked.host, other.host}
    assert routes[empty.host].digest is None
    assert routes[web.host].digest is not None and routes[web.host].digest != routes[other.host].digest
    assert (routes[locked.host].access_mode, routes[locked.host].access_generation) == ("password", 2)
    assert routes[web.host].access_mode == "public"
    assert (routes[other.host].org_slug, routes[other.host].project_name) == (bob.personal_org, "web")
    # What a follow reads: one project's hosts, and hosts by name whichever project has them now.
    some = await EdgeRouting(svc.ctx).routes_for([web.project_id, gone.project_id], [other.host, "nobody.localhost"])
    assert sorted(r.host for r in some) == sorted([web.host, other.host])

    async with started_edge(svc, check) as edge:
        # Each host is an entry of the routing table (in nginx's memory, and on disk for its
        # restarts); the config names none of them.
        table = edge.edge.table
        site = artifacts.site_dir(svc.ctx, routes[web.host].digest or "")
        assert table.entry(web.host) == Entry(Kind.public, f"{site.resolve()}/assets")
        locked_site = artifacts.site_dir(svc.ctx, routes[locked.host].digest or "")
        assert table.entry(locked.host) == Entry(Kind.protected, f"{locked_site.resolve()}/assets", 2)
        assert table.entry(empty.host) == Entry(Kind.none, str(edge.edge.layout.void_none))
        assert table.entry(gone.host) is None
        assert web.host not in edge.edge.layout.conf.read_text()
        assert f"set\t{web.host}\t1\t{site.resolve()}/assets" in edge.edge.layout.routes.read_text()
        assert (await edge.http.get(web.host)).content == b"alice web"
        assert (await edge.http.get(other.host)).content == b"bob web"
        body = assert_error(await edge.http.get(empty.host), 404, "not_found")
        assert "no deployment" in body["message"]
        r = await edge.http.get(locked.host)
        assert r.status_code == 302
        assert_error(await edge.http.get(gone.host), 404, "unknown_hostname")
