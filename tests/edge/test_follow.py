"""The edge follows each committed change through the host links, never through a reload: deploys,
rollbacks, creates, deletes and policy changes through the API leave nginx's workers as they were;
concurrent changes never lose one another (the last committed state is what is served); a change
of the config's shape is one reload however many ask for it."""

from __future__ import annotations

import asyncio
import dataclasses

from sqlalchemy import select

from svc.edge.process import EdgeProcessError
from svc.models import Deployment, Project
from tests.edge.conftest import Running
from tests.edge.helpers import Site, bundle, create_project
from tests.support.api import User, assert_error


def page(project: str, version: int) -> bytes:
    return f"<h1>{project} version {version}</h1>".encode()


async def deploy(user: User, site: Site, version: int) -> None:
    r = await user.client.post(f"/v1/orgs/{site.org}/projects/{site.name}/deployments",
                               content=bundle({"index.html": page(site.name, version)}),
                               headers={"content-type": "application/gzip"})
    assert r.status_code == 201, r.text
    assert r.json()["version"] == version


async def live_version(running: Running, site: Site) -> int:
    async with running.ctx.db.transaction(write=False) as session:
        return int(await session.scalar(select(Deployment.version).join(
            Project, Project.live_deployment_id == Deployment.id).where(Project.id == site.project_id)) or 0)


async def test_changes_are_live_at_once_and_never_reload(running: Running) -> None:
    alice = await running.svc.login("alice")
    workers = running.edge.process.workers()
    config = running.edge.serving_id
    assert workers

    site = await create_project(alice, "web")
    # A new project is routed when its create answers: no deployment yet.
    assert_error(await running.http.get(site.host), 404, "not_found")
    await deploy(alice, site, 1)
    # Live on the connection the client already had (no reload closed it).
    assert (await running.http.get(site.host)).content == page("web", 1)
    await deploy(alice, site, 2)
    assert (await running.http.get(site.host)).content == page("web", 2)
    r = await alice.client.post(f"/v1/orgs/{site.org}/projects/web/rollback", json={"version": 1})
    assert r.status_code == 200, r.text
    assert (await running.http.get(site.host)).content == page("web", 1)
    r = await alice.client.put(f"/v1/orgs/{site.org}/projects/web/access", json={"mode": "org"})
    assert r.status_code == 200, r.text
    r = await running.http.get(site.host)
    assert r.status_code == 302 and page("web", 1) not in r.content
    r = await alice.client.put(f"/v1/orgs/{site.org}/projects/web/access", json={"mode": "public"})
    assert r.status_code == 200, r.text
    assert (await running.http.get(site.host)).content == page("web", 1)
    r = await alice.client.request("DELETE", f"/v1/orgs/{site.org}/projects/web", json={"confirm": "web"})
    assert r.status_code == 202, r.text
    assert_error(await running.http.get(site.host), 404, "unknown_hostname")

    assert running.edge.process.workers() == workers
    assert running.edge.serving_id == config


async def test_sixteen_concurrent_deploys_to_sixteen_projects(running: Running) -> None:
    users = [await running.svc.login("alice"), await running.svc.login("bob")]
    owned = [(user, await create_project(user, f"p{i}")) for i in range(8) for user in users]
    sites = [site for _, site in owned]
    owner = {site.host: user for user, site in owned}

    async def deploy_and_see(site: Site, version: int) -> None:
        await deploy(owner[site.host], site, version)
        # 201 means live: this very version, whatever the others are doing.
        assert (await running.http.fresh_get(site.host)).content == page(site.name, version)

    for version in (1, 2):
        await asyncio.gather(*(deploy_and_see(site, version) for site in sites))
    for site in sites:
        assert (await running.http.fresh_get(site.host)).content == page(site.name, 2)


async def test_eight_concurrent_rollbacks_of_one_project(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    for version in range(1, 9):
        await deploy(alice, site, version)

    async def roll_to(version: int) -> None:
        r = await alice.client.post(f"/v1/orgs/{site.org}/projects/web/rollback", json={"version": version})
        assert r.status_code == 200, r.text

    for order in (range(1, 9), range(8, 0, -1), (3, 7, 1, 8, 2, 6, 4, 5)):
        await asyncio.gather(*(roll_to(v) for v in order))
        # Whichever commit came last is what the store says and what the edge serves.
        last = await live_version(running, site)
        assert (await running.http.fresh_get(site.host)).content == page("web", last)


async def test_a_shape_change_is_one_reload_however_many_ask(running: Running) -> None:
    reloads: list[str] = []
    reload = running.edge.process.reload

    async def counted(config_id: str) -> None:
        reloads.append(config_id)
        await reload(config_id)

    running.edge.process.reload = counted  # type: ignore[method-assign]
    before = running.edge.serving_id
    await asyncio.gather(*(running.edge.reconfigure() for _ in range(3)))
    assert reloads == []  # nothing changed: nothing to reload
    running.edge.options = dataclasses.replace(running.edge.options, traffic_log=running.edge.layout.traffic_log)
    await asyncio.gather(*(running.edge.reconfigure() for _ in range(20)))
    assert reloads == [running.edge.serving_id] and before != running.edge.serving_id
    assert "svc_traffic" in running.edge.layout.conf.read_text()
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(alice, site, 1)
    assert (await running.http.fresh_get(site.host)).content == page("web", 1)


async def test_a_change_nginx_missed_is_sent_with_the_whole_table(running: Running) -> None:
    """nginx could not be told (a timeout, say): the change stands in the store and on disk, the
    answer still comes, and the poller sends the whole table (after a flush, so a host removed
    meanwhile goes too) until nginx has it."""
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    other = await create_project(alice, "other")
    await deploy(alice, site, 1)
    await deploy(alice, other, 1)
    send = running.edge.process.send_routes
    failures = 0

    async def failing(lines: list[str], token: str) -> None:
        nonlocal failures
        failures += 1
        raise EdgeProcessError("timed out")

    running.edge.process.send_routes = failing  # type: ignore[method-assign]
    running.edge.settings = running.edge.settings.model_copy(update={"edge_converge_seconds": 3600})
    await deploy(alice, site, 2)
    r = await alice.client.request("DELETE", f"/v1/orgs/{other.org}/projects/other", json={"confirm": "other"})
    assert r.status_code == 202, r.text
    assert failures >= 2  # both changes (the poller may have tried too, on a loaded machine)
    # Not told: nginx's memory still has version 1 (the poller is held back meanwhile).
    assert (await running.http.fresh_get(site.host)).content == page("web", 1)
    running.edge.process.send_routes = send  # type: ignore[method-assign]
    await running.edge.converge_now()
    assert (await running.http.fresh_get(site.host)).content == page("web", 2)
    assert_error(await running.http.fresh_get(other.host), 404, "unknown_hostname")
