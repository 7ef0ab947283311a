"""A real `svc serve` (SQLite, dev login on) with its edge (nginx) on free ports, for the tests that
drive it from outside: browsers, the CLI. Stopped with SIGTERM, killed if it will not stop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.pdns import free_dns_port
from tests.support.ports import free_port
from tests.support.wait import START_SECONDS, until


@dataclass
class Server:
    api: str
    edge_port: int
    log: Path
    dns_port: int  # where its managed PowerDNS answers (127.0.0.1)
    data_dir: Path | None = None
    # Its process group (svc serve and what it started): a test may kill it (-9) to crash it.
    pgid: int | None = None

    def edge(self, host: str) -> str:
        return f"http://{host}:{self.edge_port}"


async def _wait_until(check: Callable[[], Awaitable[bool]], what: str, log: Path,
                      proc: subprocess.Popen[bytes]) -> None:
    """Until `check` holds (a server starting on a busy machine: START_SECONDS at most), or the
    server has exited."""

    async def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"svc serve exited ({proc.returncode}) before {what} came up:\n"
                                 f"{log.read_text()[-4000:]}")
        with contextlib.suppress(httpx.HTTPError):
            return await check()
        return False

    try:
        await until(up, timeout=START_SECONDS, what=what)
    except AssertionError:
        raise AssertionError(f"{what} did not come up; svc serve said:\n{log.read_text()[-4000:]}") from None


@contextlib.asynccontextmanager
async def svc_serve(tmp_path: Path, *, edge_port: int | None = None, **settings: str) -> AsyncIterator[Server]:
    """`settings`: more SVC_* variables for the server; `edge_port`: the edge's, when the test must
    know it before the server starts (a CA that checks HTTP-01 there)."""
    port, edge_port, dns_port = free_port(), edge_port or free_port(), free_dns_port()
    api = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DATA_DIR=str(tmp_path / "data"), SVC_ENABLE_DEV_AUTH="true", SVC_PUBLIC_URL=api,
               SVC_EDGE_PORT=str(edge_port), SVC_EDGE_CONVERGE_SECONDS="0.2",
               # Its managed PowerDNS on a port of its own (tests run side by side), trusted as the
               # public DNS, as `make run` does (SVC_TRUST_OWN_ZONES; a test may say "false").
               SVC_DNS_PORT=str(dns_port), SVC_TRUST_OWN_ZONES="true",
               # No private database cluster unless a test asks for one (it costs an initdb).
               SVC_PROJECT_DB_ENABLED="false")
    env.update(settings)
    log = tmp_path / "serve.log"
    svc = shutil.which("svc", path=str(Path(sys.executable).parent)) or "svc"
    with log.open("wb") as out:
        proc = subprocess.Popen([svc, "serve", "--host", "127.0.0.1", "--port", str(port), "--edge-port",
                                 str(edge_port)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Server(api=api, edge_port=edge_port, log=log, dns_port=int(env["SVC_DNS_PORT"]),
                    data_dir=Path(env["SVC_DATA_DIR"]), pgid=proc.pid)
    try:
        async with httpx.AsyncClient(timeout=5) as http:
            async def api_up() -> bool:
                return (await http.get(f"{api}/v1/config")).status_code == 200

            async def edge_up() -> bool:  # a host nobody routes: the edge's own 404
                r = await http.get(f"http://127.0.0.1:{edge_port}/", headers={"host": "nobody.localhost"})
                return r.status_code == 404 and r.json().get("code") == "unknown_hostname"

            await _wait_until(api_up, "the svc API", log, proc)
            await _wait_until(edge_up, "the edge", log, proc)
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(proc.wait, 20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            await asyncio.to_thread(proc.wait, 10)
