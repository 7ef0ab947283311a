"""The worker runtime on workerd: a few workerd processes that svc starts, supervises and stops.
Everything they have lives under SVC_DATA_DIR/workers/:

    serve-<n>/     a loading process of shard n (config.capnp, which workerd reads on its standard
                   input, workerd.log, workerd.pid): svc's dispatcher worker (dispatcher.js)
                   loads each project's worker in an isolate of its own on its first request
    steady-<n>-a/  the steady processes of shard n, blue and green in turn (steady.py): the
    steady-<n>-b/  shard's live workers named in their configuration, each on a unix socket
    check/         the process that checks a bundle's worker before its deployment goes live: a
                   worker whose top-level code never returns stalls only this one

A project is served by the processes of one shard (shard_of). workerd has no
limit on the CPU time of a request: a worker that loops forever stalls its whole process (every
project of that shard). A watchdog asks each serving process for its health twice a second and
kills one that answers none for 5 s; the supervisor starts it again (docs/workers.md, "Limits")."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import pwd
import secrets
import shutil
import signal
import stat
import tempfile
import zlib
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from svc.adapters.workers.config import DirectWorker, RuntimeOptions, render
from svc.adapters.workers.port import (
    BadWorker,
    EmailVerdict,
    InboundEmail,
    LiveWorkers,
    RuntimeUnavailable,
    SteadyChanged,
    Upstream,
    WorkerCode,
    WorkerFailed,
)
from svc.adapters.workers.steady import SteadyWorkers
from svc.supervisor import (
    Port,
    ProcessError,
    ProcessSpec,
    Supervisor,
    find_binary,
    free_tcp_port,
    http_get,
    port_in_use,
)

log = logging.getLogger("svc.workers")

HEALTH_PATH = "/__svc/runtime/health"
CHECK_PATH = "/__svc/runtime/check"
# A received message to a worker's email() (the dispatcher's Control entrypoint, on the control socket).
EMAIL_PATH = "/email"
START_SECONDS = 10.0
# How long svc's stop waits for a process before SIGKILL (one stuck in a loop never exits). A
# replaced steady process is given the wall-time bound instead, to finish its requests in flight.
STOP_SECONDS = 2.0
# Where `make setup` installs workerd (npm, pinned by package-lock.json), besides PATH.
NODE_BIN = Path(__file__).resolve().parents[4] / "node_modules" / ".bin"
# workerd's Worker Loader is marked experimental: the flag allows it (docs/workers.md).
ARGS = ("serve", "--experimental", "/dev/stdin")


def find_workerd() -> str | None:
    """workerd on PATH, else the one `make setup` installed; None when neither is there."""
    return find_binary("workerd", (str(NODE_BIN),))


def runnable_by_others(binary: str) -> str:
    """`binary`, or a copy any user may run. workerd as SVC_WORKER_USER cannot start from a
    directory only root may enter (a checkout under /root, say): then it runs from a copy in a
    directory of svc's own under the system's temp dir, named by the binary's size and time."""
    path = Path(binary).resolve()
    if _others_may_run(path):
        return str(path)
    st = path.stat()
    home = Path(tempfile.gettempdir()) / f"svc-workerd-{st.st_size}-{int(st.st_mtime)}"
    copy = home / "workerd"
    with contextlib.suppress(FileExistsError):
        home.mkdir(mode=0o755)
    mine = home.lstat()
    if not stat.S_ISDIR(mine.st_mode) or mine.st_uid != os.geteuid() or mine.st_mode & 0o022:
        # Someone else made that name first: a directory of our own instead.
        home = Path(tempfile.mkdtemp(prefix="svc-workerd-"))
        copy = home / "workerd"
    os.chmod(home, 0o755)  # noqa: S103 - the point: the worker user runs the binary from here
    if not (copy.is_file() and copy.stat().st_size == st.st_size):
        partial = home / f".workerd.{os.getpid()}"
        shutil.copyfile(path, partial)
        os.chmod(partial, 0o755)  # noqa: S103 - read and run by the worker user, written by svc only
        partial.replace(copy)
    return str(copy)


def socket_dir(root: Path) -> Path:
    """Where the steady workers' unix sockets live: a directory of svc's own in the system's temp
    dir, named by the runtime's directory. Not under SVC_DATA_DIR: workerd as SVC_WORKER_USER
    binds them, so every directory above them must let it pass (and a socket's address holds
    108 bytes at most)."""
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"svc-sockets-{digest}"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o755)
    mine = path.lstat()
    if not stat.S_ISDIR(mine.st_mode) or mine.st_uid != os.geteuid():
        path = Path(tempfile.mkdtemp(prefix="svc-sockets-"))  # someone else's name: one of our own
    os.chmod(path, 0o755)  # noqa: S103 - passed through by workerd and nginx; what is in it is guarded
    return path


def _others_may_run(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in (path, *path.parents))


@dataclass(frozen=True)
class WorkerdOptions:
    binary: str
    root: Path
    # svc's API, and the edge's server of the deployments' files (env.ASSETS): host:port.
    api_address: str
    assets_address: str
    host: str = "127.0.0.1"
    processes: int = 2
    # How long a check may take (top-level code included) before the worker is refused.
    check_seconds: float = 10.0
    # The watchdog: a serving process that has not answered its health probe for this long is killed.
    stuck_seconds: float = 5.0
    probe_every: float = 0.5
    # One isolate's V8 heap, in MB.
    memory_mb: int = 128
    # How long a shard waits after a change before its new steady process starts (steady.py).
    settle_seconds: float = 0.3
    # How long a replaced steady process may finish its requests in flight (SVC_WORKER_TIMEOUT_SECONDS).
    drain_seconds: float = 30.0
    # Run as this user (svc must then be root): it owns the process's directory and nothing else
    # of svc's (workerd reads no file of svc's: code and files come over HTTP).
    user: str | None = None


class _Process:
    """One workerd process of the runtime: its directory, its fixed address, its supervisor. A
    steady one also serves `direct` workers on their sockets; `on_ready` runs after each start."""

    def __init__(self, runtime: WorkerdRuntime, name: str, direct: Sequence[DirectWorker] = (),
                 on_ready: Callable[[], Awaitable[None]] | None = None,
                 on_exit: Callable[[int], Awaitable[bool]] | None = None, control: bool = False) -> None:
        self.runtime = runtime
        self.dir = runtime.options.root / name
        self.direct = tuple(direct)
        self.on_ready = on_ready
        self.port = free_tcp_port(runtime.options.host)
        # A loading process's control socket: svc's own calls (a message to a worker's email()).
        self.control_port = free_tcp_port(runtime.options.host) if control else None
        options = runtime.options
        ports = (Port(options.host, self.port),) + (
            (Port(options.host, self.control_port),) if self.control_port is not None else ())
        self.supervisor = Supervisor(ProcessSpec(
            name=f"workerd {name} ({options.host}:{self.port})", binary=options.binary, args=ARGS,
            log=self.dir / "workerd.log", pid_file=self.dir / "workerd.pid", cwd=self.dir,
            stdin=self.dir / "config.capnp",
            env={"PATH": os.defpath, "LANG": "C.UTF-8"}, user=options.user,
            ports=ports, prepare=self._prepare, ready=self._ready,
            start_seconds=START_SECONDS, stop_seconds=STOP_SECONDS, kill_group=True, on_exit=on_exit,
        ), logger=log)

    async def _prepare(self) -> None:
        await asyncio.to_thread(self._write_files)

    async def _ready(self) -> bool:
        if not await self.healthy():
            return False
        if self.direct:
            # It holds the projects' secrets: on disk only from its writing to workerd's reading
            # it (written again by _prepare before a restart, from what svc holds in memory).
            await asyncio.to_thread(self.forget_config)
        if self.on_ready is not None:
            await self.on_ready()
        return True

    def _write_files(self) -> None:
        options = self.runtime.options
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        config = render(RuntimeOptions(listen_host=options.host, listen_port=self.port,
                                       api_address=options.api_address, assets_address=options.assets_address,
                                       memory_mb=options.memory_mb, token=self.runtime.token,
                                       control_port=self.control_port,
                                       control_token=self.runtime.control_token), self.direct)
        # workerd reads it on its standard input (reopening /dev/stdin checks the file's own owner,
        # not the path): as another user it owns the file and its directory, nothing else of svc's.
        owner = pwd.getpwnam(options.user) if options.user is not None and os.geteuid() == 0 else None
        for sockets in {worker.socket.parent for worker in self.direct}:
            # workerd binds its workers' sockets there (a fresh path each: what a run left is removed).
            sockets.mkdir(exist_ok=True)
            os.chmod(sockets, 0o755)  # noqa: S103 - nginx reaches its sockets through it
            for stale in sockets.glob("*.sock"):
                stale.unlink(missing_ok=True)
            if owner is not None:
                os.chown(sockets, owner.pw_uid, owner.pw_gid)
        tmp = self.dir / ".config.capnp.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(config)
        if owner is not None:
            os.chown(tmp, owner.pw_uid, owner.pw_gid)
            # Its working directory too (workerd opens it); the log and pid files in it stay svc's.
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        tmp.replace(self.dir / "config.capnp")

    def forget_config(self) -> None:
        (self.dir / "config.capnp").unlink(missing_ok=True)

    async def healthy(self, seconds: float = 2.0) -> bool:
        answer = await http_get(self.runtime.options.host, self.port, HEALTH_PATH,
                                headers={"X-Svc-Runtime-Token": self.runtime.token}, seconds=seconds)
        return answer is not None and answer[0] == 200

    def listening(self) -> bool:
        """Whether it takes new connections: a draining workerd has closed its listening sockets."""
        return port_in_use(Port(self.runtime.options.host, self.port))

    def kill(self) -> None:
        """What the watchdog does to a process that stopped answering: the supervisor starts it again."""
        with contextlib.suppress(ProcessError, ProcessLookupError):  # not running (any more): nothing to kill
            self.supervisor.send_signal(signal.SIGKILL)


class WorkerdRuntime:
    """WorkerRuntime on workerd processes (port.py)."""

    def __init__(self, options: WorkerdOptions) -> None:
        self.options = options
        self.token = secrets.token_urlsafe(32)
        # The control sockets' token: svc's alone (nginx, which holds `token`, never sees it).
        self.control_token = secrets.token_urlsafe(32)
        self._serving = [_Process(self, f"serve-{n}", control=True) for n in range(max(1, options.processes))]
        self._checker = _Process(self, "check")
        self._steady: SteadyWorkers | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._client = httpx.AsyncClient(timeout=options.check_seconds, trust_env=False)
        self.description = f"workerd ({len(self._serving)} serving processes and a checker)"

    def upstreams(self) -> tuple[Upstream, ...]:
        return tuple(Upstream(self.options.host, p.port) for p in self._serving)

    def shard_of(self, project_id: str) -> int:
        # Stable across restarts and processes (crc32, not hash()): every svc of a cluster agrees.
        return zlib.crc32(project_id.encode()) % len(self._serving)

    # --- the steady path (steady.py) ---

    def follow(self, live: LiveWorkers, on_steady: SteadyChanged, cuts: Path | None = None) -> None:
        if self._steady is not None:
            self._steady.follow(live, on_steady, cuts)

    def changed(self, project_ids: Collection[str] | None = None) -> None:
        if self._steady is not None:
            self._steady.changed(project_ids)

    def steady_upstream(self, project_id: str, key: str) -> str | None:
        return self._steady.upstream(project_id, key) if self._steady is not None else None

    def steady_sockets(self) -> str:
        return str(self._steady.slots) if self._steady is not None else ""

    async def start(self) -> None:
        def make_process(name: str, direct: Sequence[DirectWorker], on_ready: Callable[[], Awaitable[None]],
                         on_exit: Callable[[int], Awaitable[bool]] | None = None) -> _Process:
            return _Process(self, name, direct, on_ready, on_exit)

        sockets = await asyncio.to_thread(socket_dir, self.options.root)
        self._steady = SteadyWorkers(len(self._serving), self.shard_of, make_process, sockets,
                                     settle_seconds=self.options.settle_seconds,
                                     drain_seconds=self.options.drain_seconds)
        for process in (*self._serving, self._checker):
            await process.supervisor.start()
        self._watchdog = asyncio.create_task(self._watch(), name="workerd watchdog")

    async def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
            self._watchdog = None
        if self._steady is not None:
            await self._steady.stop()
            self._steady = None
        await asyncio.gather(*(p.supervisor.stop() for p in (*self._serving, self._checker)))
        await self._client.aclose()

    async def _watch(self) -> None:
        """Each serving process (loading or steady) watched on its own (one stuck process does not
        delay the others' probes)."""
        watching: dict[_Process, asyncio.Task[None]] = {}
        try:
            while True:
                steady = self._steady.processes() if self._steady is not None else []
                watched = {*self._serving, *(p for p in steady if isinstance(p, _Process))}
                for process in watched - watching.keys():
                    watching[process] = asyncio.create_task(self._watch_one(process),
                                                            name=f"watchdog {process.supervisor.name}")
                for process in watching.keys() - watched:
                    watching.pop(process).cancel()
                await asyncio.sleep(self.options.probe_every)
        finally:
            for task in watching.values():
                task.cancel()

    async def _watch_one(self, process: _Process) -> None:
        """The CPU bound: a probe every probe_every; a process that answers none for stuck_seconds
        from the first unanswered one's sending (a worker holding its only thread) is killed. A
        loop that began just after a probe is cut within stuck_seconds + probe_every."""
        loop = asyncio.get_running_loop()
        bound = self.options.stuck_seconds
        while True:
            await asyncio.sleep(self.options.probe_every)
            pid = process.supervisor.pid
            if not process.supervisor.running:
                continue
            since = loop.time()
            while not await process.healthy(seconds=max(0.05, since + bound - loop.time())):
                if not process.supervisor.running or process.supervisor.pid != pid:
                    break  # it exited, or was started again: its next run is watched afresh
                if loop.time() - since >= bound:
                    log.error("%s answered no health probe for %gs, the CPU bound (a worker that never returns?): "
                              "killing it", process.supervisor.name, bound)
                    process.kill()
                    break
                await asyncio.sleep(0.05)

    async def deliver_email(self, project_id: str, key: str, message: InboundEmail) -> EmailVerdict:
        process = self._serving[self.shard_of(project_id)]
        url = f"http://{self.options.host}:{process.control_port}{EMAIL_PATH}"
        headers = {"X-Svc-Control-Token": self.control_token, "X-Svc-Worker": key, "X-Svc-Mail-Id": message.mail_id,
                   "X-Svc-Mail-From": message.sender, "X-Svc-Mail-To": message.recipients,
                   "content-type": "message/rfc822"}
        try:
            # The handler's wall-time bound is a request's (SVC_WORKER_TIMEOUT_SECONDS), and a bit
            # for the worker's loading.
            answer = await self._client.post(url, content=message.raw, headers=headers,
                                             timeout=self.options.drain_seconds + self.options.check_seconds)
        except httpx.TimeoutException:
            raise WorkerFailed(f"its email() did not finish within {self.options.drain_seconds:g} s") from None
        except httpx.HTTPError as exc:
            raise RuntimeUnavailable(f"the worker runtime did not answer: {exc}") from None
        verdict = _json(answer)
        outcome, reason = verdict.get("outcome"), verdict.get("reason")
        if answer.status_code == 200 and outcome in ("handled", "rejected", "no_handler"):
            return EmailVerdict(outcome=str(outcome), reason=str(reason) if reason is not None else None)
        if answer.status_code == 500 and verdict.get("code") == "worker_error":
            raise WorkerFailed(str(verdict.get("message") or "its email() threw"))
        raise RuntimeUnavailable(f"the worker runtime answered {answer.status_code}: {verdict.get('message', '')}")

    async def check(self, code: WorkerCode) -> None:
        process = self._checker
        body = {"mainModule": code.main_module, "modules": dict(code.modules),
                "compatibilityDate": code.compatibility_date}
        url = f"http://{self.options.host}:{process.port}{CHECK_PATH}"
        try:
            answer = await self._client.post(url, json=body, headers={"X-Svc-Runtime-Token": self.token})
        except httpx.TimeoutException:
            # Top-level code that never returns: the checker is stuck in it, and is replaced.
            process.kill()
            raise BadWorker(f"the worker did not finish loading within {self.options.check_seconds:.0f} s "
                            "(top-level code that never returns?)") from None
        except httpx.HTTPError as exc:
            raise RuntimeUnavailable(f"the worker runtime did not answer: {exc}") from None
        if answer.status_code != 200:
            raise RuntimeUnavailable(f"the worker runtime answered {answer.status_code} to a check")
        verdict = answer.json()
        if not verdict.get("ok"):
            raise BadWorker(str(verdict.get("error") or "the worker cannot be loaded"))


def _json(answer: httpx.Response) -> dict[str, object]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
