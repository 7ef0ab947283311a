"""Convergence: the edge follows the store (deploy, rollback, teardown) through its poll loop and on
converge_now; a switch is atomic under load; it survives nginx being killed, an svc restart, an
nginx left behind by a dead svc, a config nginx refuses, and a second svc process with its own
data dir on the same store."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
from pathlib import Path

import httpx
import pytest

from svc.adapters.edge.settings import EdgeSettings
from svc.domains.deployments import artifacts
from svc.edge import EdgePortInUse, NginxEdge, edge_port_taken, process, start_edge
from svc.edge.component import EdgeRouting
from svc.settings import Config
from tests.edge.conftest import NGINX, Running, edge_settings, started_edge
from tests.edge.helpers import FakeCheck, Site, bundle, create_project, deploy, rollback
from tests.support import stores
from tests.support.api import running_svc
from tests.support.config import configured
from tests.support.s3 import create_bucket, moto_server, s3_settings
from tests.support.wait import WAIT_SECONDS


def _edge_port(config: Config) -> int:
    return config.settings_of(EdgeSettings).edge_port



def page(version: int) -> bytes:
    return f"<h1>version {version}</h1>".encode() + b"." * 4000


def script(version: int) -> bytes:
    return f"window.version = {version};".encode() + b" " * 3000


def files(version: int) -> dict[str, bytes]:
    return {"index.html": page(version), "app.js": script(version)}


async def wait_for(predicate_coro: object, what: str, seconds: float = WAIT_SECONDS) -> None:
    for _ in range(int(seconds / 0.05)):
        if await predicate_coro():  # type: ignore[operator]
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_poll_loop_follows_the_store(running: Running) -> None:
    """No converge_now: a committed change moves edge_state.generation and the loop picks it up."""
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, files(1))

    async def serves(version: int) -> bool:
        r = await running.http.fresh_get(site.host, "/")
        return r.status_code == 200 and r.content == page(version)

    await wait_for(lambda: serves(1), "version 1 to go live")
    await deploy(running.ctx, site, files(2))
    await wait_for(lambda: serves(2), "version 2 to go live")
    await rollback(running.ctx, site, 1)
    await wait_for(lambda: serves(1), "the rollback")

    # Teardown unroutes the project: its host becomes unknown.
    r = await alice.client.request("DELETE", f"/v1/orgs/{site.org}/projects/{site.name}", json={"confirm": "web"})
    assert r.status_code == 202

    async def unknown() -> bool:
        r = await running.http.fresh_get(site.host, "/")
        return r.status_code == 404 and r.json()["code"] == "unknown_hostname"

    await wait_for(unknown, "the host to be unrouted")


async def test_switch_is_atomic_under_load(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, files(1))
    await running.edge.converge_now()
    valid = {"/": {page(1), page(2)}, "/app.js": {script(1), script(2)}}
    seen: dict[bytes, int] = {}
    stop = asyncio.Event()
    retried = 0

    async def hammer(client: httpx.AsyncClient, path: str) -> None:
        nonlocal retried
        while not stop.is_set():
            try:
                r = await client.get(path, headers={"host": site.host})
            except (httpx.RemoteProtocolError, httpx.ReadError):
                # A keep-alive connection closed (or reset) by a gracefully stopping worker as the
                # request went out; browsers retry these (idempotent GET), and so does this loop.
                retried += 1
                continue
            assert r.status_code == 200, r.text
            assert r.content in valid[path], r.content[:40]
            seen[r.content] = seen.get(r.content, 0) + 1

    clients = [httpx.AsyncClient(base_url=f"http://127.0.0.1:{running.http.port}", timeout=10) for _ in range(2)]
    tasks = [asyncio.create_task(hammer(c, p)) for c in clients for p in ("/", "/app.js")]

    async def served_more(*bodies: bytes, n: int = 5) -> None:
        """The hammering clients have had each body n more times (they keep going meanwhile)."""
        target = {body: seen.get(body, 0) + n for body in bodies}

        async def reached() -> bool:
            for task in tasks:
                if task.done():
                    task.result()  # a client that stopped: its failed assertion
            return all(seen.get(body, 0) >= count for body, count in target.items())

        await wait_for(reached, f"{n} more answers of each version under load")

    try:
        await served_more(page(1), script(1))
        await deploy(running.ctx, site, files(2))
        await running.edge.converge_now()
        # Once converge_now returned, every request gets version 2 only, on connections old and new.
        for _ in range(10):
            assert (await running.http.fresh_get(site.host, "/")).content == page(2)
            assert (await running.http.get(site.host, "/")).content == page(2)
        await served_more(page(2), script(2))
        await rollback(running.ctx, site, 1)
        await running.edge.converge_now()
        for _ in range(10):
            r = await running.http.fresh_get(site.host, "/app.js")
            assert r.content == script(1)
        await served_more(page(1), script(1))
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        for c in clients:
            await c.aclose()
    assert retried == 0  # no reload: no connection was closed under the clients


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_nginx_killed_is_restarted_and_serves_the_same_state(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, files(1))
    await running.edge.converge_now()
    master = running.edge.process.pid
    workers = running.edge.process.workers()
    assert master is not None and workers
    os.kill(master, signal.SIGKILL)

    async def back() -> bool:
        pid = running.edge.process.pid
        if pid == master or not running.edge.process.running:
            return False
        try:
            r = await running.http.fresh_get(site.host, "/")
        except httpx.TransportError:
            return False
        return r.content == page(1)

    await wait_for(back, "nginx to be started again")
    # The killed master's workers (which would keep serving the old config) are gone.
    assert not any(_alive(w) for w in workers)
    # And it keeps converging.
    await deploy(running.ctx, site, files(2))
    await running.edge.converge_now()
    assert (await running.http.fresh_get(site.host, "/")).content == page(2)


async def test_svc_restart_rebuilds_from_the_store(tmp_path: Path, check: FakeCheck) -> None:
    settings = edge_settings(tmp_path / "data")
    async with running_svc(settings) as svc, started_edge(svc, check) as r:
        alice = await svc.login("alice")
        site = await create_project(alice, "web")
        await deploy(svc.ctx, site, files(1))
        await r.edge.converge_now()
        assert (await r.http.get(site.host, "/")).content == page(1)
    # Stopped: the port is closed.
    with pytest.raises(httpx.ConnectError):
        await httpx.AsyncClient().get(f"http://127.0.0.1:{_edge_port(settings)}/", headers={"host": site.host})
    # Nothing of the edge's own files is needed: the config comes from the store.
    shutil.rmtree(settings.settings.data_dir / "edge")
    async with running_svc(settings) as svc, started_edge(svc, check) as r:
        assert (await r.http.get(site.host, "/")).content == page(1)
        assert (await r.http.get(site.host, "/app.js")).content == script(1)


async def test_nginx_left_by_a_dead_svc_is_replaced(tmp_path: Path, check: FakeCheck) -> None:
    """svc killed (-9) leaves its nginx running; the next svc on that data dir stops it and serves."""
    assert NGINX is not None
    settings = edge_settings(tmp_path / "data")
    async with running_svc(settings) as svc:
        alice = await svc.login("alice")
        site = await create_project(alice, "web")
        await deploy(svc.ctx, site, files(1))
        first = NginxEdge(svc.ctx.config, EdgeRouting(svc.ctx), api_url=check.url, binary=NGINX)
        await first.start()
        old_master = first.process.pid
        assert old_master is not None
        for task in first._tasks:  # what kill -9 of svc leaves: nginx, no supervisor
            task.cancel()
        first.process.abandon()
        await deploy(svc.ctx, site, files(2))
        async with started_edge(svc, check) as r:
            assert r.edge.process.pid != old_master
            assert (await r.http.fresh_get(site.host, "/")).content == page(2)
        assert not _alive(old_master)


async def test_refused_config_keeps_the_old_one(running: Running, caplog: pytest.LogCaptureFixture) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, files(1))
    await running.edge.converge_now()
    good = running.edge.layout.conf.read_text()
    installed = await running.edge._install(good.replace("worker_processes", "worker_processes_typo"))
    assert installed is False
    assert "nginx -t refused the new edge config" in caplog.text
    assert running.edge.layout.conf.read_text() == good
    assert not running.edge.layout.candidate.exists()
    await running.edge.process.reload(running.edge._config_id())  # still reloads fine
    assert (await running.http.fresh_get(site.host, "/")).content == page(1)


async def test_missing_site_is_served_once_it_arrives(running: Running) -> None:
    """A live digest whose files this process has not got (yet): the host keeps what it served
    before, and the loop retries until the site is there."""
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, files(1))
    await running.edge.converge_now()
    await deploy(running.ctx, site, files(2))
    v2 = artifacts.site_dir(running.ctx, await _live_digest(running, site))
    hidden = v2.with_name(v2.name + ".away")
    v2.rename(hidden)
    await running.edge.converge_now()
    assert (await running.http.fresh_get(site.host, "/")).content == page(1)
    hidden.rename(v2)

    async def serves_v2() -> bool:
        return (await running.http.fresh_get(site.host, "/")).content == page(2)

    await wait_for(serves_v2, "the site to be picked up by the loop")


async def _live_digest(running: Running, site: Site) -> str:
    from sqlalchemy import select

    from svc.models import Deployment, Project
    async with running.ctx.db.transaction(write=False) as session:
        return str(await session.scalar(select(Deployment.digest).join(
            Project, Project.live_deployment_id == Deployment.id).where(Project.id == site.project_id)))


async def test_second_process_on_the_same_store(tmp_path: Path, check: FakeCheck) -> None:
    """Two svc processes share a PostgreSQL store and an S3-compatible blob store, each with its own
    data dir and edge. A deploy through the first's API is live there when it answers; the second
    sees the change through the store, fetches and unpacks the bundle (ensure_site) and serves it."""
    url = await stores.new_pg_database()
    try:
        with moto_server(tmp_path) as s3:
            create_bucket(s3, "bundles")
            s1 = s3_settings(edge_settings(tmp_path / "one", url), s3, "bundles")
            s2 = s3_settings(edge_settings(tmp_path / "two", url), s3, "bundles")
            async with running_svc(s1) as svc1, started_edge(svc1, check) as e1, \
                    running_svc(s2) as svc2, started_edge(svc2, check) as e2:
                alice = await svc1.login("alice")
                site = await create_project(alice, "web")
                base = f"/v1/orgs/{site.org}/projects/web"
                for version in (1, 2):
                    r = await alice.client.post(f"{base}/deployments", content=bundle(files(version)),
                                                headers={"content-type": "application/gzip"})
                    assert r.status_code == 201, r.text
                    # 201 means live on this process's edge.
                    assert (await e1.http.fresh_get(site.host, "/")).content == page(version)

                async def serves(version: int) -> bool:
                    return (await e2.http.fresh_get(site.host, "/")).content == page(version)

                await wait_for(lambda: serves(2), "the second edge to serve version 2")
                # Unpacked into the second process's own data dir from the blob store.
                assert artifacts.site_dir(svc2.ctx, await _live_digest(e1, site)).is_dir()
                r = await alice.client.post(f"{base}/rollback", json={"version": 1})
                assert r.status_code == 200, r.text
                assert (await e1.http.fresh_get(site.host, "/")).content == page(1)
                await wait_for(lambda: serves(1), "the second edge to roll back")
    finally:
        await stores.drop_pg_database(url)


async def test_edge_port_taken_by_another_program(tmp_path: Path, check: FakeCheck) -> None:
    """Not an endless retry: start() fails at once with EdgePortInUse, and nothing is left running."""
    assert NGINX is not None
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        settings = edge_settings(tmp_path / "data", edge_port=port)
        assert edge_port_taken(configured(settings))
        async with running_svc(settings) as svc:
            edge = NginxEdge(svc.ctx.config, EdgeRouting(svc.ctx), api_url=check.url, binary=NGINX)
            with pytest.raises(EdgePortInUse) as caught:
                await edge.start()
            assert caught.value.address == f"127.0.0.1:{port}"
            assert not edge.process.running
            with pytest.raises(EdgePortInUse):
                await start_edge(svc.ctx.config, EdgeRouting(svc.ctx), api_url=check.url)
    assert not edge_port_taken(configured(settings))


async def test_an_nginx_without_the_lua_module_leaves_the_edge_off(tmp_path: Path, check: FakeCheck,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """The routing table lives in nginx's Lua module: without it the edge says so, and the API runs."""
    assert NGINX is not None
    bare = tmp_path / "bin" / "nginx"
    bare.parent.mkdir()
    shutil.copy(NGINX, bare)  # beside no modules directory
    monkeypatch.setattr(process, "MODULE_DIRS", ())
    settings = edge_settings(tmp_path / "data", nginx_binary=str(bare))
    async with running_svc(settings) as svc:
        assert await start_edge(svc.ctx.config, EdgeRouting(svc.ctx), api_url=check.url) is None
    assert "has no Lua module" in caplog.text and "apt-get install libnginx-mod-http-lua" in caplog.text
    assert not (settings.settings.data_dir / "edge" / "nginx.pid").exists()
