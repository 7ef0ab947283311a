"""kill -9 in the middle of an upload: no deployment row, and after a restart no staging directory
or temporary file is left; while the upload ran, nothing of it was visible and the state store
stayed writable."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

from svc.settings import Settings
from tests.deployments.conftest import Env
from tests.support import bundles
from tests.support.api import running_svc
from tests.support.wait import START_SECONDS, until

ROOT = Path(__file__).resolve().parents[2]


def _start(settings: Settings, tmp: Path) -> tuple[subprocess.Popen[bytes], Path]:
    env = {**os.environ, "SVC_DATA_DIR": str(settings.data_dir), "SVC_ENABLE_DEV_AUTH": "true",
           "SVC_EDGE_ENABLED": "false", "SVC_PUBLIC_URL": settings.public_url}
    if settings.database_url:
        env["SVC_DATABASE_URL"] = settings.database_url
    port_file = tmp / "port"
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "tests.deployments.server_process", str(port_file)],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return proc, port_file


async def _wait_for(check: Callable[[], bool], what: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    def done() -> bool:
        if check():
            return True
        if proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}) waiting for {what}")
        return False

    try:
        await until(done, timeout=START_SECONDS, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}:\n{log.read_text()[-3000:]}") from None


def _partials(data_dir: Path) -> list[str]:
    sites = data_dir / "sites"
    tmp = data_dir / "tmp"
    found = [p.name for p in sites.iterdir()] if sites.is_dir() else []
    found += [p.name for p in tmp.iterdir()] if tmp.is_dir() else []
    return found


async def test_kill_9_mid_upload_leaves_no_row_and_no_partial_file(settings: Settings, tmp_path: Path) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    proc, port_file = _start(settings, tmp_path)
    log = tmp_path / "server.log"
    try:
        await _wait_for(port_file.exists, "the server", proc, log)
        base = f"http://127.0.0.1:{port_file.read_text()}"
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            r = await http.post("/v1/auth/dev/login", json={"subject": "alice"})
            token = r.json()["token"]
            auth = {"authorization": f"Bearer {token}"}
            assert (await http.post("/v1/orgs", json={"slug": "acme"}, headers=auth)).status_code == 201
            r = await http.post("/v1/orgs/acme/projects", json={"name": "web"}, headers=auth)
            assert r.status_code == 201, r.text

            # An upload of ~20 MB, of which only the first part is sent.
            body = b"".join(bundles.big_site(20, 1024 * 1024))
            _, writer = await asyncio.open_connection("127.0.0.1", int(port_file.read_text()))
            writer.write((f"POST /v1/orgs/acme/projects/web/deployments HTTP/1.1\r\nHost: svc\r\n"
                          f"Authorization: Bearer {token}\r\nContent-Type: application/gzip\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n").encode() + body[:len(body) // 3])
            await writer.drain()

            def unpacking() -> bool:
                staging = list((settings.data_dir / "sites").glob(".staging-*"))
                return bool(staging) and any(staging[0].rglob("*.bin"))

            await _wait_for(unpacking, "files in the staging directory", proc, log)
            # Mid-upload: nothing of it is visible, and the state store takes writes.
            r = await http.get("/v1/orgs/acme/projects/web/deployments", headers=auth)
            assert r.status_code == 200 and r.json()["deployments"] == [], r.text
            r = await http.post("/v1/orgs/acme/projects", json={"name": "other"}, headers=auth)
            assert r.status_code == 201, r.text

            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            writer.close()
        left = _partials(settings.data_dir)
        assert any(n.startswith(".staging-") for n in left) and any(n.startswith("upload-") for n in left), left
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)

    # Restart: the partial staging directory and upload are swept; no deployment exists.
    async with running_svc(settings) as svc:
        assert _partials(settings.data_dir) == []
        env = Env(svc=svc, owner=await svc.login("alice"))
        assert await env.rows() == 0
        assert (await env.deployments())["deployments"] == []
        detail = (await env.owner.client.get(env.base)).json()
        assert detail["liveDeployment"] is None
        # The project takes a deployment as version 1.
        r = await env.deploy(bundles.site())
        assert r.status_code == 201 and r.json()["version"] == 1, r.text
