"""`svc serve` as a user runs it: it starts and supervises its edge, prints the edge URL, survives
being killed (-9) and started again on the same data dir (the nginx it left behind is replaced),
and without nginx still serves the API and says the edge is off. Also create_app(run_edge=True)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from svc.adapters.edge.settings import EdgeSettings
from svc.adapters.mail.eml import EmlDirectorySender
from svc.app import create_app
from svc.context import Adapters, AppContext
from svc.db import open_database
from svc.edge import NginxEdge
from svc.settings import Settings
from tests.edge.conftest import edge_settings
from tests.edge.helpers import Site, deploy
from tests.support.api import assert_error
from tests.support.config import configured
from tests.support.pdns import free_dns_port
from tests.support.ports import free_port

SVC = str(Path(sys.executable).parent / "svc")


def _env(data_dir: Path, api_port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_") and k != "XDG_CONFIG_HOME"}
    return env | {"SVC_DATA_DIR": str(data_dir), "SVC_ENABLE_DEV_AUTH": "true",
                  "SVC_PUBLIC_URL": f"http://127.0.0.1:{api_port}", "SVC_EDGE_CONVERGE_SECONDS": "0.2",
                  "SVC_DNS_PORT": str(free_dns_port())} | extra


@contextmanager
def serve(log: Path, env: dict[str, str], api_port: int, edge_port: int) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        proc = subprocess.Popen([SVC, "serve", "--port", str(api_port), "--edge-port", str(edge_port)],
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{api_port}/v1/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _edge_get(port: int, host: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}/", headers={"host": host}, timeout=5)


def _wait_served(port: int, host: str, body: bytes) -> None:
    for _ in range(300):
        try:
            if _edge_get(port, host).content == body:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{host} did not serve {body!r}")


async def _deploy_into(settings: Settings, site: Site, files: dict[str, bytes]) -> None:
    """A deployment written into the running server's store and data dir from this process."""
    db = open_database(settings)
    try:
        ctx = AppContext(settings=settings, db=db, adapters=Adapters(mail=EmlDirectorySender(settings.mail_dir())))
        await deploy(ctx, site, files)
    finally:
        await db.dispose()


def _master_pid(data_dir: Path) -> int:
    return int((data_dir / "edge" / "nginx.pid").read_text())


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _stop_leftover_nginx(data_dir: Path) -> None:
    """If the test failed between kill -9 and the restart, the nginx it left is stopped here."""
    try:
        pid = _master_pid(data_dir)
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return
    if cmd.startswith("nginx: master process") and str(data_dir) in cmd:
        os.kill(pid, signal.SIGQUIT)


async def test_svc_serve_runs_its_edge_and_survives_kill_9(tmp_path: Path) -> None:
    try:
        await _kill_9_scenario(tmp_path)
    finally:
        _stop_leftover_nginx(tmp_path / "data")


async def _kill_9_scenario(tmp_path: Path) -> None:
    data_dir, api_port, edge_port = tmp_path / "data", free_port(), free_port()
    env = _env(data_dir, api_port)
    log = tmp_path / "serve.log"
    with serve(log, env, api_port, edge_port) as proc:
        api = f"http://127.0.0.1:{api_port}"
        token = httpx.post(f"{api}/v1/auth/dev/login", json={"subject": "alice"}).json()["token"]
        auth = {"authorization": f"Bearer {token}"}
        org = next(o["slug"] for o in httpx.get(f"{api}/v1/me", headers=auth).json()["orgs"] if o["personal"])
        r = httpx.post(f"{api}/v1/orgs/{org}/projects", json={"name": "web"}, headers=auth)
        assert r.status_code == 201, r.text
        site = Site(project_id=r.json()["id"], name="web", org=org, host=r.json()["hostname"])
        assert r.json()["url"] == f"http://web-{org}.localhost:{edge_port}"
        # The edge follows the store on its own (here within SVC_EDGE_CONVERGE_SECONDS).
        _wait_served(edge_port, site.host, b'{"code":"not_found","message":"This project has no deployment yet",'
                                           b'"details":null}')

        await _deploy_into(Settings(data_dir=data_dir), site, {"index.html": b"v1"})
        _wait_served(edge_port, site.host, b"v1")
        first_nginx = _master_pid(data_dir)

        # Password mode through the real access API and the real check (domains/access): the
        # policy answer means it is live on the edge.
        r = httpx.put(f"{api}/v1/orgs/{org}/projects/web/access", headers=auth,
                      json={"mode": "password", "password": "correct horse"})
        assert r.status_code == 200, r.text
        edge = f"http://127.0.0.1:{edge_port}"
        r = httpx.get(f"{edge}/", headers={"host": site.host})
        assert r.status_code == 302
        assert r.headers["location"] == f"http://{site.host}:{edge_port}/__svc/password?next=/"
        assert r.headers.get_list("cache-control") == ["private, no-store"]
        r = httpx.get(f"{edge}/__svc/password?next=/", headers={"host": site.host})
        assert r.status_code == 200 and "password" in r.text.lower()
        assert r.headers.get_list("cache-control") == ["private, no-store"]  # the API's own no-store replaced
        r = httpx.post(f"{edge}/__svc/password", headers={"host": site.host},
                       data={"password": "correct horse", "next": "/"})
        assert r.status_code == 303, r.text
        assert r.headers.get_list("cache-control") == ["private, no-store"]
        cookie = r.headers["set-cookie"].split(";", 1)[0]
        r = httpx.get(f"{edge}/", headers={"host": site.host, "cookie": cookie})
        assert (r.status_code, r.content) == (200, b"v1")
        assert r.headers.get_list("cache-control") == ["private, no-store"]
        # The real check reads every svc_access cookie: one planted by a sibling host, sent first,
        # neither hides the real one nor gets in on its own (asked every time, never cached).
        for _ in range(2):
            r = httpx.get(f"{edge}/", headers={"host": site.host, "cookie": f"svc_access=planted; {cookie}"})
            assert (r.status_code, r.content) == (200, b"v1")
        assert httpx.get(f"{edge}/", headers={"host": site.host, "cookie": "svc_access=planted"}).status_code == 302
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    out = log.read_text()
    assert f"edge:      http://<project>-<org>.localhost:{edge_port}/" in out

    # svc is gone; the nginx it left keeps running until the next svc replaces it, and with no
    # API to ask it refuses the protected site rather than serve it.
    assert _running(first_nginx)
    assert_error(_edge_get(edge_port, site.host), 500, "internal")
    await _deploy_into(Settings(data_dir=data_dir), site, {"index.html": b"v2"})
    with serve(log, env, api_port, edge_port):
        for _ in range(300):
            r = httpx.get(f"{edge}/", headers={"host": site.host, "cookie": cookie})
            if r.content == b"v2":
                break
            time.sleep(0.05)
        assert (r.status_code, r.content) == (200, b"v2")
        second_nginx = _master_pid(data_dir)
        assert second_nginx != first_nginx
        assert not _running(first_nginx)
        assert httpx.get(f"{edge}/", headers={"host": site.host}).status_code == 302
    # A clean stop stops nginx too.
    with pytest.raises(httpx.TransportError):
        _edge_get(edge_port, site.host)
    assert not _running(second_nginx)


async def test_svc_serve_without_nginx_runs_the_api(tmp_path: Path) -> None:
    api_port, edge_port = free_port(), free_port()
    env = _env(tmp_path / "data", api_port, SVC_NGINX_BINARY=str(tmp_path / "no-nginx-here"))
    log = tmp_path / "serve.log"
    with serve(log, env, api_port, edge_port):
        r = httpx.post(f"http://127.0.0.1:{api_port}/v1/auth/dev/login", json={"subject": "alice"})
        assert r.status_code == 200
        with pytest.raises(httpx.TransportError):
            _edge_get(edge_port, "web-alice.localhost")
    out = log.read_text()
    assert "edge:      OFF" in out
    assert "apt-get install nginx-light" in out


async def test_create_app_runs_the_edge(tmp_path: Path) -> None:
    settings = edge_settings(tmp_path / "data")
    app = create_app(settings, run_edge=True, edge_api="http://127.0.0.1:1")
    async with app.router.lifespan_context(app):
        edge = app.state.ctx.edge
        assert isinstance(edge, NginxEdge)
        assert edge.process.running
        r = await asyncio.to_thread(_edge_get, settings.settings_of(EdgeSettings).edge_port, "who.localhost")
        assert r.json()["code"] == "unknown_hostname"
    assert not edge.process.running

    off = create_app(configured(settings, nginx_binary=str(tmp_path / "missing")), run_edge=True)
    async with off.router.lifespan_context(off):
        assert off.state.ctx.edge is None
    disabled = create_app(configured(settings, edge_enabled=False), run_edge=True)
    async with disabled.router.lifespan_context(disabled):
        assert disabled.state.ctx.edge is None
