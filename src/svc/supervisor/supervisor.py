"""One supervised process: started with a readiness check, started again with backoff when it dies,
stopped gracefully. What the process is comes from its ProcessSpec; the rules are the same for all:

- A missing binary raises MissingBinary and another program holding one of its ports raises
  PortInUse (nothing is left running): the caller decides (svc serve exits with one line, or runs
  without the component). Checked again after a failed start, so a port taken between the check
  and the process's own bind is reported the same way.
- Any other failed start (it exited, it was not ready in time) is logged in one line with the
  telling line of its log and retried with backoff (min_backoff doubling to max_backoff).
- A process that dies is started again after the backoff, its last words in the error line; a run
  of steady_seconds resets the backoff. What is left of its process group is killed first when the
  spec says so.
- A process of ours that a killed svc left running (its pid in pid_file, its command line ours) is
  stopped before ours starts; its ports do not count as taken meanwhile (`taken_port`).
- stop(): the spec's stop signal, SIGKILL after stop_seconds (or the caller's `grace`: a process
  that drains its requests in flight, a replaced workerd, is given as long as a request may take),
  and reaped.

Every start and stop runs under `lock`, which the owner may share to serialise its own work with
restarts (the edge: converging and reloading nginx)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from svc.kit.files import file_size, read_from
from svc.supervisor.spec import MissingBinary, Port, PortInUse, ProcessError, ProcessSpec, find_binary, resolve_binary
from svc.supervisor.system import alive, cmdline, group_members, kill_group, port_in_use

_TAIL_BYTES = 4096


def exit_words(code: int | None) -> str:
    """How a process ended, in words: "exit status 1", "killed by SIGKILL"."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def stale_pid(spec: ProcessSpec) -> int | None:
    """The pid of a process of ours still running from an earlier start (its pid file, checked alive
    and ours by its command line), or None."""
    if spec.pid_file is None:
        return None
    try:
        pid = int(spec.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) and spec.is_ours(cmdline(pid)) else None


def taken_port(spec: ProcessSpec) -> Port | None:
    """The first of the spec's ports another program holds, checked before anything starts; None
    when all are free or when a process of ours a killed svc left running holds them (its next
    start replaces it)."""
    if stale_pid(spec) is not None:
        return None
    return next((port for port in spec.ports if port_in_use(port)), None)


async def _until(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether `condition` became true within `seconds` (polled: what it watches is not our child)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


class Supervisor:
    """The process of one spec: launch() starts it once, start() also keeps it running, stop() ends both."""

    def __init__(self, spec: ProcessSpec, *, lock: asyncio.Lock | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.spec = spec
        self.lock = lock or asyncio.Lock()
        self.log = logger or logging.getLogger("svc.supervisor")
        self._proc: asyncio.subprocess.Process | None = None
        self._exe: str | None = None
        self._started_at = 0.0
        # Where each log stood when the current (or last) run started: what it said since.
        self._offsets: dict[Path, int] = {}
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def pid(self) -> int | None:
        """The pid of the current (or last) run."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def wait(self) -> int:
        """Until the current run exits; its exit status (negative: the signal that killed it)."""
        if self._proc is None:
            return 0
        return await self._proc.wait()

    def send_signal(self, sig: signal.Signals) -> None:
        if self._proc is None or self._proc.returncode is not None:
            raise ProcessError(f"{self.name} is not running")
        self._proc.send_signal(sig)

    def last_log(self) -> str:
        """The telling line of what the process said since its current (or last) start."""
        said = []
        for path in self.spec.logs:
            size = file_size(path)
            start = max(self._offsets.get(path, 0), size - _TAIL_BYTES)
            said.append(read_from(path, start, _TAIL_BYTES))
        return self.spec.reason("\n".join(said))

    # --- supervised ---

    async def start(self) -> None:
        """Start the process and keep it running. Raises MissingBinary or PortInUse (nothing running,
        nothing retried); any other failed start is logged in one line and retried with backoff."""
        if self._task is not None:
            return
        self._stopping.clear()
        try:
            async with self.lock:
                await self._launch()
        except (MissingBinary, PortInUse):
            raise
        except (ProcessError, OSError) as exc:
            self.log.error("%s did not start; retrying in %.1fs: %s", self.name, self.spec.min_backoff, exc)
        self._task = asyncio.create_task(self._supervise(), name=f"supervise {self.name}")

    async def stop(self, grace: float | None = None) -> None:
        """Stop supervising and stop the process gracefully: the stop signal, then SIGKILL after
        `grace` seconds (default: the spec's stop_seconds)."""
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        async with self.lock:
            await self._stop_process(self.spec.stop_seconds if grace is None else grace)

    def abandon(self) -> None:
        """Stop supervising and leave the process running: what an svc killed with -9 leaves behind
        (the next start on the same files replaces it)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _supervise(self) -> None:
        spec = self.spec
        delay = spec.min_backoff
        while not self._stopping.is_set():
            if self.running:
                code = await self.wait()
                if self._stopping.is_set():
                    return
                # One that keeps dying young is started again less and less often; a long run starts afresh.
                if time.monotonic() - self._started_at >= spec.steady_seconds:
                    delay = spec.min_backoff
                again = spec.on_exit is None or await spec.on_exit(code)
                self.log.error("%s exited (%s); %s: %s", self.name, exit_words(code),
                               f"starting it again in {delay:.1f}s" if again else "its owner replaces it",
                               self.last_log())
                async with self.lock:
                    await self._clean_up()
                if not again:
                    self._task = None
                    return
            await self._sleep(delay)
            next_delay = min(delay * 2, spec.max_backoff)
            async with self.lock:
                if self._stopping.is_set():
                    return
                try:
                    await self._launch()
                except (ProcessError, OSError) as exc:
                    self.log.error("%s did not start; retrying in %.1fs: %s", self.name, next_delay, exc)
                except Exception:
                    self.log.exception("%s did not start; retrying in %.1fs", self.name, next_delay)
            delay = next_delay

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)

    # --- one run ---

    async def launch(self) -> None:
        """Start the process once (not supervised) and return when it is ready. MissingBinary,
        PortInUse, or ProcessError with the telling line of its log."""
        async with self.lock:
            await self._launch()

    async def _launch(self) -> None:
        if self.running:
            return
        spec = self.spec
        self._exe = resolve_binary(spec.binary, spec.search, what=spec.name)
        await self._stop_stale()
        await self._wait_ports_free()
        if spec.prepare is not None:
            await spec.prepare()
        self._rotate_logs()
        self._offsets = {path: file_size(path) for path in spec.logs}
        spec.log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with spec.log.open("ab") as out, contextlib.ExitStack() as files:
            stdin = files.enter_context(spec.stdin.open("rb")) if spec.stdin is not None else asyncio.subprocess.DEVNULL
            self._proc = await asyncio.create_subprocess_exec(
                self._exe, *spec.args, stdin=stdin, stdout=out, stderr=out,
                start_new_session=True, env=dict(spec.env) if spec.env is not None else None, cwd=spec.cwd,
                **_as_user(spec.user))
        self._started_at = time.monotonic()
        self._write_pid_file(self._proc.pid)
        try:
            if spec.ready is not None:
                await self.wait_until(spec.ready, spec.start_seconds, "ready")
        except BaseException as exc:
            await self._kill()
            # Taken between the check above and the process's own bind (it exited, or never answered).
            if isinstance(exc, ProcessError):
                taken = next((port for port in spec.ports if port_in_use(port)), None)
                if taken is not None:
                    raise PortInUse(taken) from None
            raise
        self.log.info("%s started (pid %s)", self.name, self._proc.pid)

    async def wait_until(self, check: Callable[[], Awaitable[bool]], seconds: float, what: str) -> None:
        """Poll `check` until it is true while the process runs; ProcessError with the telling line of
        its log when it exits or `seconds` pass first. Each check is bounded by the time left."""
        deadline = time.monotonic() + seconds
        delay = 0.005
        while True:
            if not self.running:
                code = self._proc.returncode if self._proc is not None else None
                raise ProcessError(f"{exit_words(code)}: {self.last_log()} (log: {self.spec.log})")
            left = deadline - time.monotonic()
            with contextlib.suppress(TimeoutError):
                if await asyncio.wait_for(check(), timeout=max(left, 0.05)):
                    return
            if time.monotonic() > deadline:
                raise ProcessError(f"not {what} within {seconds:g}s: {self.last_log()} (log: {self.spec.log})")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    async def _wait_ports_free(self) -> None:
        """PortInUse when another program holds a port (the process would fail to bind, again and
        again). A short grace covers a process of ours on its way out (one just stopped, the previous
        run of a restart): it may hold its sockets a moment after it shows as gone."""
        deadline = time.monotonic() + self.spec.port_grace_seconds
        while (taken := next((port for port in self.spec.ports if port_in_use(port)), None)) is not None:
            if time.monotonic() > deadline:
                raise PortInUse(taken)
            await asyncio.sleep(0.05)

    async def stop_stale(self) -> None:
        """Stop a process of ours that a killed svc left running (each start does it too)."""
        async with self.lock:
            await self._stop_stale()

    async def _stop_stale(self) -> None:
        """A process of ours a killed svc left running (it still holds the ports): asked to stop with
        the stop signal, killed after stop_seconds, its group cleared."""
        pid = stale_pid(self.spec)
        if pid is None or pid == self.pid:
            return
        self.log.warning("%s: stopping pid %s, left running by a previous svc", self.name, pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, self.spec.stop_signal)

        def gone() -> bool:
            return not (alive(pid) and self.spec.is_ours(cmdline(pid)))

        if not await _until(gone, self.spec.stop_seconds):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            await _until(gone, self.spec.stop_seconds)
        await self._clear_group(pid)

    async def _clear_group(self, pgid: int) -> None:
        """Kill what is left of a group our process led (kill_group specs) and wait until it is gone:
        its members hold the listening sockets until then."""
        exe = self._exe or find_binary(self.spec.binary, self.spec.search)
        if not self.spec.kill_group or exe is None:
            return
        kill_group(pgid, exe)
        await _until(lambda: not group_members(pgid, exe), self.spec.stop_seconds)

    async def _clean_up(self) -> None:
        """The process has exited: what is left of its group, its pid file."""
        if self._proc is not None and self._proc.returncode is not None:
            await self._clear_group(self._proc.pid)
            self._remove_pid_file(self._proc.pid)

    async def _kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        await self._clean_up()

    async def _stop_process(self, grace: float) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(self.spec.stop_signal)
            try:
                await asyncio.wait_for(proc.wait(), timeout=grace)
            except TimeoutError:
                self.log.warning("%s did not stop in %gs; killing it", self.name, grace)
        await self._kill()

    # --- files ---

    def _rotate_logs(self) -> None:
        for path in self.spec.logs:
            if file_size(path) > self.spec.rotate_bytes:
                path.replace(path.with_name(path.name + ".1"))

    def _write_pid_file(self, pid: int) -> None:
        if self.spec.pid_file is None:
            return
        self.spec.pid_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.spec.pid_file.with_name(self.spec.pid_file.name + ".tmp")
        tmp.write_text(f"{pid}\n")
        tmp.replace(self.spec.pid_file)

    def _remove_pid_file(self, pid: int) -> None:
        if self.spec.pid_file is None:
            return
        with contextlib.suppress(OSError, ValueError):
            if int(self.spec.pid_file.read_text().strip()) == pid:
                self.spec.pid_file.unlink()


def _as_user(user: str | None) -> dict[str, Any]:
    """The arguments that make the child run as `user` (svc as root); none when svc already is that
    user. ProcessError when svc would have to be root and is not."""
    if user is None:
        return {}
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise ProcessError(f"the user {user} does not exist") from None
    if os.geteuid() == entry.pw_uid:
        return {}
    if os.geteuid() != 0:
        raise ProcessError(f"running as {user} needs svc to run as root or as {user}")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
