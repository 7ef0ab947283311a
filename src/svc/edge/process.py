"""One private nginx: started as a child of svc (`nginx -p EDGE -c EDGE/nginx.conf -g 'daemon off;'`,
in a process group of its own) and supervised by svc.supervisor, tested with `nginx -t`, reloaded
with SIGHUP, stopped with SIGQUIT.

nginx's workers outlive a master that was killed (they keep the listening socket and the old
config), so whenever the master is gone its whole process group is killed before a new one starts
(the spec's kill_group).

"Serving a config" is checked, not assumed: the config answers its own id on the status probe
(config.STATUS_HOST), and after a reload the workers of the previous config must have stopped
accepting (their title becomes "worker process is shutting down")."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx

from svc.edge.config import (
    CONTROL_CERTS_PATH,
    CONTROL_HOST,
    CONTROL_PATH,
    CONTROL_TRAFFIC_PATH,
    LUA_MODULES,
    MODULE_DIRS,
    STATUS_HOST,
    STATUS_PATH,
    EdgeLayout,
)
from svc.supervisor import Port, ProcessError, ProcessSpec, Supervisor, children, http_get, title

log = logging.getLogger("svc.edge")

START_SECONDS = 10.0
RELOAD_SECONDS = 15.0
CONTROL_SECONDS = 30.0


class EdgeProcessError(ProcessError):
    """nginx would not start, take a config or answer."""


class EdgePortInUse(EdgeProcessError):
    """The edge's listen address is taken by another program (not an nginx of this data dir)."""

    def __init__(self, address: str) -> None:
        super().__init__(f"the edge address {address} is in use")
        self.address = address


def nginx_build(binary: str) -> str:
    """What `nginx -V` says: its version and how it was built ("" when it cannot run)."""
    try:
        return subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=10, check=False).stderr
    except (OSError, subprocess.SubprocessError):
        return ""


def lua_modules(binary: str, build: str) -> tuple[Path, ...] | None:
    """The module files this nginx loads for Lua, in order: () when it has Lua compiled in
    (OpenResty), None when it has none (Debian: apt-get install libnginx-mod-http-lua). `build`:
    nginx_build(binary)."""
    if "lua-nginx-module" in build or "ngx_lua" in build:
        return ()
    found = Path(binary).resolve().parent.parent / "lib" / "nginx" / "modules"
    for directory in (found, *MODULE_DIRS):
        if all((directory / name).is_file() for name in LUA_MODULES):
            return tuple(directory / name for name in LUA_MODULES)
    return None


def nginx_spec(binary: str, layout: EdgeLayout, listen: Port,
               ready: Callable[[], Awaitable[bool]] | None = None) -> ProcessSpec:
    """The edge's nginx as svc runs it; `ready`: it serves the expected config."""
    return ProcessSpec(
        name=f"edge nginx ({listen.address})", binary=binary, log=layout.stderr_log, other_logs=(layout.error_log,),
        args=("-p", str(layout.root), "-c", str(layout.conf), "-g", "daemon off;"), ports=(listen,), ready=ready,
        pid_file=layout.pid, owns=lambda args: _is_master_of(args, layout), stop_signal=signal.SIGQUIT,
        kill_group=True, start_seconds=START_SECONDS)


def _is_master_of(args: Sequence[str], layout: EdgeLayout) -> bool:
    """Whether a command line is an nginx master running this very config (nginx retitles itself)."""
    line = " ".join(args)
    return line.startswith("nginx: master process") and str(layout.conf) in line


class NginxProcess(Supervisor):
    """The supervised nginx, with what only nginx has: the config test, the graceful reload, the probe."""

    def __init__(self, binary: str, layout: EdgeLayout, listen: Port, probe_host: str, *,
                 config_id: Callable[[], str], lock: asyncio.Lock | None = None) -> None:
        super().__init__(nginx_spec(binary, layout, listen, ready=self._serves_expected), lock=lock, logger=log)
        self.binary = binary
        self.layout = layout
        self.probe_host = probe_host
        self.probe_port = listen.port
        # The id of the config nginx must serve once started (the one on disk).
        self.config_id = config_id
        self._control: httpx.AsyncClient | None = None

    async def _serves_expected(self) -> bool:
        return await self.probe() == self.config_id()

    # --- config test ---

    async def test(self, conf: Path) -> tuple[bool, str]:
        """`nginx -t` of a config file: (ok, nginx's output)."""
        proc = await asyncio.create_subprocess_exec(
            self.binary, "-t", "-q", "-p", str(self.layout.root), "-c", str(conf),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        return proc.returncode == 0, out.decode("utf-8", "replace").strip()

    # --- reload ---

    def workers(self) -> set[int]:
        """Workers of the running master that accept connections (not shutting down)."""
        if not self.running or self.pid is None:
            return set()
        return {pid for pid in children(self.pid)
                if title(pid).startswith("nginx: worker process") and "shutting down" not in title(pid)}

    async def reload(self, config_id: str) -> None:
        """Graceful reload (SIGHUP) onto the config file; returns once only workers of the new
        config accept connections."""
        if not self.running:
            raise EdgeProcessError("nginx is not running")
        old = self.workers()
        self.send_signal(signal.SIGHUP)

        async def serving() -> bool:
            if await self.probe() != config_id:
                return False
            workers = self.workers()
            # Without /proc (not Linux) the probe is all there is to go by.
            return not old or bool(workers and not workers & old)

        try:
            await self.wait_until(serving, RELOAD_SECONDS, f"serving config {config_id}")
        except EdgeProcessError:
            raise
        except ProcessError as exc:
            raise EdgeProcessError(f"nginx did not take config {config_id}: {exc}") from None

    # --- the routing table ---

    def _control_client(self) -> httpx.AsyncClient:
        """nginx's control server (the edge's own listener, Host: _svc-edge-control)."""
        if self._control is None:
            self._control = httpx.AsyncClient(base_url=f"http://{_url_host(self.probe_host)}:{self.probe_port}",
                                              timeout=CONTROL_SECONDS, trust_env=False)
        return self._control

    async def send_routes(self, lines: list[str], token: str) -> None:
        """Changes of the routing table (lua/svc_routes.lua) to the running nginx: applied in its
        memory, seen by every worker's next request, when this returns."""
        await self._send(CONTROL_PATH, lines, token, "the routing table's changes")

    async def send_certificates(self, lines: list[str], token: str) -> None:
        """Changes of the certificates' table (lua/svc_tls.lua): served from the next handshake on."""
        await self._send(CONTROL_CERTS_PATH, lines, token, "the certificates' changes")

    async def _send(self, path: str, lines: list[str], token: str, what: str) -> None:
        body = "".join(f"{line}\n" for line in lines).encode()
        try:
            r = await self._control_client().post(path, content=body, headers={
                "host": CONTROL_HOST, "x-svc-edge-token": token, "content-type": "text/plain"})
        except httpx.HTTPError as exc:
            raise EdgeProcessError(f"nginx could not be sent {what}: {type(exc).__name__}") from None
        if r.status_code != 200:
            raise EdgeProcessError(f"nginx refused {what} ({r.status_code}): {r.text[:200]}")

    async def collect_traffic(self, token: str) -> str:
        """The traffic counts nginx kept since the last call (taken away as they are read)."""
        try:
            r = await self._control_client().get(CONTROL_TRAFFIC_PATH,
                                                 headers={"host": CONTROL_HOST, "x-svc-edge-token": token})
        except httpx.HTTPError as exc:
            raise EdgeProcessError(f"nginx could not be asked for its traffic counts: {exc!r}") from None
        if r.status_code != 200:
            raise EdgeProcessError(f"nginx refused to hand over its traffic counts ({r.status_code})")
        return r.text

    async def aclose(self) -> None:
        if self._control is not None:
            await self._control.aclose()
            self._control = None

    async def probe(self) -> str | None:
        """The config id a fresh connection is served with (None: no answer)."""
        answer = await http_get(self.probe_host, self.probe_port, STATUS_PATH, headers={"Host": STATUS_HOST})
        if answer is None or answer[0] != 200:
            return None
        return answer[1].decode("ascii", "replace").strip()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
