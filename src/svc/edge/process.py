"""One private nginx: started as a child of svc (`nginx -p EDGE -c EDGE/nginx.conf -g 'daemon off;'`,
in a process group of its own), tested with `nginx -t`, reloaded with SIGHUP, stopped with SIGQUIT.

nginx's workers outlive a master that was killed (they keep the listening socket and the old
config), so whenever the master is gone its whole process group is killed before a new one starts.
The group id is the dead master's pid, which the kernel does not reuse while the group has members.

"Serving a config" is checked, not assumed: the config answers its own id on the status probe
(config.STATUS_HOST), and after a reload the workers of the previous config must have stopped
accepting (their title becomes "worker process is shutting down")."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import signal
import socket
import time
from pathlib import Path

from svc.edge.config import STATUS_HOST, STATUS_PATH, EdgeLayout, listen_address
from svc.kit.files import file_size, read_from, tail

log = logging.getLogger("svc.edge")

START_SECONDS = 10.0
RELOAD_SECONDS = 15.0
STOP_SECONDS = 5.0
PORT_GRACE_SECONDS = 1.0


class EdgeProcessError(RuntimeError):
    """nginx would not start, take a config or answer."""


class EdgePortInUse(EdgeProcessError):
    """The edge's listen address is taken by another program (not an nginx of this data dir)."""

    def __init__(self, address: str) -> None:
        super().__init__(f"the edge address {address} is in use")
        self.address = address


# What nginx says when it cannot bind (it retries for ~2.5 s, then exits).
_BIND_IN_USE = "(98: Address already in use)"


def port_in_use(host: str, port: int) -> bool:
    """Whether another socket listens on host:port (a bind as nginx does it, SO_REUSEADDR
    included, so connections in TIME_WAIT do not count). Other bind errors are left to nginx."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def stale_master(layout: EdgeLayout) -> int | None:
    """The pid of an nginx master running this very config (found by the pid file and checked by
    its command line): one a previous svc on this data dir left running."""
    try:
        pid = int(layout.pid.read_text().strip())
    except (OSError, ValueError):
        return None
    cmd = _cmdline(pid)
    if cmd.startswith("nginx: master process") and str(layout.conf) in cmd:
        return pid
    return None


def find_nginx(binary: str) -> str | None:
    """The nginx executable (a name on PATH, /usr/sbin included, or a path), or None."""
    if os.sep in binary:
        return binary if os.path.isfile(binary) and os.access(binary, os.X_OK) else None
    path = os.environ.get("PATH", os.defpath)
    return shutil.which(binary, path=os.pathsep.join([path, "/usr/sbin", "/usr/local/sbin"]))








def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def _processes() -> list[tuple[int, int, int]] | None:
    """(pid, parent pid, process group id) of every process (Linux /proc); None where /proc is missing."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    found = []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        # The command name (in parentheses) may hold spaces and parentheses: fields start after the last ")".
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2:
            found.append((int(name), int(fields[1]), int(fields[2])))
    return found


def _children(ppid: int) -> list[int]:
    """Pids whose parent is `ppid`; [] where /proc is missing."""
    return [pid for pid, parent, _ in _processes() or [] if parent == ppid]


def _group_members(pgid: int) -> list[int] | None:
    """nginx processes in process group `pgid`; None where /proc is missing."""
    processes = _processes()
    if processes is None:
        return None
    return [pid for pid, _, group in processes if group == pgid and _cmdline(pid).startswith("nginx")]


def _kill_group(pgid: int) -> None:
    """SIGKILL what is left of an nginx's process group (the group id is its master's pid). Only
    nginx processes of that group are signalled, one by one: once the group is empty its number
    may be reused by an unrelated process group."""
    members = _group_members(pgid)
    if members is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        return
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class NginxProcess:
    def __init__(self, binary: str, layout: EdgeLayout, probe_host: str, probe_port: int,
                 listen_host: str | None = None) -> None:
        self.binary = binary
        self.layout = layout
        self.probe_host = probe_host
        self.probe_port = probe_port
        # The address the config listens on (checked free before nginx starts); default: the probe's.
        self.listen_host = listen_host if listen_host is not None else probe_host
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    # --- config test ---

    async def test(self, conf: Path) -> tuple[bool, str]:
        """`nginx -t` of a config file: (ok, nginx's output)."""
        proc = await asyncio.create_subprocess_exec(
            self.binary, "-t", "-q", "-p", str(self.layout.root), "-c", str(conf),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        return proc.returncode == 0, out.decode("utf-8", "replace").strip()

    # --- start / stop ---

    async def stop_stale(self) -> None:
        """An nginx of this data dir left by an svc that died without stopping it: found by the pid
        file and checked to be the master of this very config before it is stopped."""
        pid = stale_master(self.layout)
        if pid is None:
            return
        log.warning("stopping the edge nginx (pid %s) a previous svc left running", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGQUIT)
        for _ in range(int(STOP_SECONDS / 0.05)):
            if not _cmdline(pid).startswith("nginx: master process"):
                break
            await asyncio.sleep(0.05)
        _kill_group(pid)
        # Its workers hold the listening socket until they are gone.
        for _ in range(int(STOP_SECONDS / 0.05)):
            if not _group_members(pid):
                break
            await asyncio.sleep(0.05)

    async def start(self, config_id: str) -> None:
        """Start nginx on the config file and wait until it serves `config_id`."""
        if self.running:
            return
        await self.stop_stale()
        await self._check_port()
        logs = {path: file_size(path) for path in (self.layout.stderr_log, self.layout.error_log)}
        with self.layout.stderr_log.open("ab") as err:
            self._proc = await asyncio.create_subprocess_exec(
                self.binary, "-p", str(self.layout.root), "-c", str(self.layout.conf), "-g", "daemon off;",
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=err,
                start_new_session=True)
        try:
            await self._wait_serving(config_id, old_workers=set(), seconds=START_SECONDS)
        except EdgeProcessError as exc:
            await self.kill()
            # Taken between the check above and nginx's bind.
            if any(_BIND_IN_USE in read_from(path, offset) for path, offset in logs.items()):
                raise EdgePortInUse(listen_address(self.listen_host, self.probe_port)) from exc
            raise
        log.info("edge nginx started (pid %s)", self._proc.pid)

    async def _check_port(self) -> None:
        """EdgePortInUse when another program listens on the edge's address (nginx would retry
        binding for seconds, then exit, and the supervisor would start it again, endlessly). A
        short grace covers processes of ours still on their way out (a killed nginx's workers)."""
        deadline = time.monotonic() + PORT_GRACE_SECONDS
        while port_in_use(self.listen_host, self.probe_port):
            if time.monotonic() > deadline:
                raise EdgePortInUse(listen_address(self.listen_host, self.probe_port))
            await asyncio.sleep(0.05)

    async def wait(self) -> int:
        """Until the master exits; returns its exit code."""
        if self._proc is None:
            return 0
        return await self._proc.wait()

    def cleanup_after_exit(self) -> None:
        """The master is gone: kill what is left of its group (orphaned workers)."""
        if self._proc is not None and self._proc.returncode is not None:
            _kill_group(self._proc.pid)

    async def kill(self) -> None:
        if self._proc is None:
            return
        if self._proc.returncode is None:
            _kill_group(self._proc.pid)
            await self._proc.wait()
        _kill_group(self._proc.pid)

    async def stop(self) -> None:
        """Graceful (SIGQUIT: requests in flight finish), then the group is killed."""
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGQUIT)
            try:
                await asyncio.wait_for(proc.wait(), timeout=STOP_SECONDS)
            except TimeoutError:
                log.warning("edge nginx did not stop in %ss; killing it", STOP_SECONDS)
        await self.kill()
        self._proc = None

    # --- reload ---

    def workers(self) -> set[int]:
        """Workers of the running master that accept connections (not shutting down)."""
        if self._proc is None or self._proc.returncode is not None:
            return set()
        return {pid for pid in _children(self._proc.pid)
                if _cmdline(pid).startswith("nginx: worker process")
                and "shutting down" not in _cmdline(pid)}

    async def reload(self, config_id: str) -> None:
        """Graceful reload (SIGHUP) onto the config file; returns once only workers of the new
        config accept connections."""
        if self._proc is None or self._proc.returncode is not None:
            raise EdgeProcessError("nginx is not running")
        old = self.workers()
        self._proc.send_signal(signal.SIGHUP)
        await self._wait_serving(config_id, old_workers=old, seconds=RELOAD_SECONDS)

    async def _wait_serving(self, config_id: str, *, old_workers: set[int], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        delay = 0.005
        while True:
            if self._proc is None or self._proc.returncode is not None:
                code = self._proc.returncode if self._proc else None
                raise EdgeProcessError(f"nginx exited ({code}): {self.last_errors()}")
            if await self.probe() == config_id:
                workers = self.workers()
                # Without /proc (not Linux) the probe is all there is to go by.
                if not old_workers or (workers and not workers & old_workers):
                    return
            if time.monotonic() > deadline:
                raise EdgeProcessError(f"nginx did not serve config {config_id} within {seconds}s: "
                                       f"{self.last_errors()}")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    async def probe(self) -> str | None:
        """The config id a fresh connection is served with (None: no answer)."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.probe_host, self.probe_port), timeout=2)
        except (OSError, TimeoutError):
            return None
        try:
            writer.write(f"GET {STATUS_PATH} HTTP/1.0\r\nHost: {STATUS_HOST}\r\n\r\n".encode())
            await writer.drain()
            data = await asyncio.wait_for(reader.read(), timeout=2)
        except (OSError, TimeoutError):
            return None
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            return None
        return body.decode("ascii", "replace").strip()

    def last_errors(self) -> str:
        return (tail(self.layout.stderr_log, 600) + "\n" + tail(self.layout.error_log, 1200)).strip()
