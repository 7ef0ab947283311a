"""The one way svc runs git: the reads (reading.py), the repositories' upkeep (local.py), `git
http-backend` (http_backend.py) and the SSH server's upload-pack and receive-pack (ssh_server.py)
all start it here.

- Environment (`environment`): built from nothing, never inherited (svc may itself run under a git
  hook, GIT_DIR and the like set): PATH, LC_ALL=C, no system or user configuration
  (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), never a prompt (GIT_TERMINAL_PROMPT=0), HOME
  only where the caller gives one. Configuration the caller sets travels in the environment
  (GIT_CONFIG_COUNT/KEY/VALUE), so no repository carries a path of this machine.
- Process group (`start`, `kill`): every git runs in a session of its own, so ending it (its time
  up, its client gone, svc stopping) ends what it started too (pack-objects, index-pack, the
  receive-pack under http-backend) with one SIGKILL to the group.
- Timeouts (`running`, `output`): past its `seconds` the group is killed and the call fails with
  GitUnreachable saying so. The reads and the upkeep have one; serving (http-backend, SSH) has none:
  a transfer lasts as long as its client sends and reads (a push is bounded by
  receive.maxInputSize, the connection by its own timeouts).
- Errors: git not found is GitUnavailable; git that could not start, failed (the last line it
  wrote to stderr) or ran out of time is GitUnreachable."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from svc.adapters.git.port import GitUnavailable, GitUnreachable

PIPE = asyncio.subprocess.PIPE
DEVNULL = asyncio.subprocess.DEVNULL
STDERR_KEPT = 4096  # bytes of stderr kept for the error: its end, where git says why
_STREAM_LIMIT = 64 * 1024  # asyncio's own default


def environment(*, home: Path | None = None, config: Mapping[str, str] | None = None,
                extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What git runs with: the safe defaults above, `config` as git configuration, then `extra`."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
    if home is not None:
        env["HOME"] = str(home)
    if config:
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for i, (key, value) in enumerate(config.items()):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    env.update(extra or {})
    return env


def describe(argv: Sequence[str]) -> str:
    """"git ls-tree" for `git --git-dir R ls-tree ...`: the command, in errors."""
    words = list(argv[1:])
    while words and words[0].startswith("-"):
        if words.pop(0) in ("--git-dir", "-C", "-c") and words:
            words.pop(0)
    return f"git {words[0]}" if words else "git"


async def start(argv: Sequence[str], env: Mapping[str, str], *, stdin: int = DEVNULL, stdout: int = PIPE,
                stderr: int = PIPE, limit: int = _STREAM_LIMIT) -> asyncio.subprocess.Process:
    """git started in a session (and process group) of its own, its streams as asked (a pipe, or
    a descriptor of the caller's)."""
    try:
        return await asyncio.create_subprocess_exec(*argv, env=dict(env), stdin=stdin, stdout=stdout, stderr=stderr,
                                                    limit=limit, start_new_session=True)
    except FileNotFoundError as exc:
        raise GitUnavailable(f"git is not installed on this node ({argv[0]} is missing)") from exc
    except OSError as exc:
        raise GitUnreachable(f"{describe(argv)} could not start: {exc}") from exc


def kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL to git's process group (git and what it started); nothing once git has ended."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


class Git:
    """A git process of `running`: its stdout to read; its stderr drained alongside (a full stderr
    pipe would block git, and with it the read of stdout), only the tail kept for the error."""

    def __init__(self, process: asyncio.subprocess.Process, what: str, seconds: float | None) -> None:
        assert process.stdout is not None and process.stderr is not None
        self.process = process
        self.stdout = process.stdout
        self.what = what
        self.seconds = seconds
        self.timed_out = False
        self._stderr = asyncio.create_task(_tail(process.stderr))
        self._timer = None if seconds is None else asyncio.get_running_loop().call_later(seconds, self._expire)

    def _expire(self) -> None:
        self.timed_out = True
        kill(self.process)  # its stdout ends: the reader sees the end, then wait() says why

    async def wait(self) -> int:
        """git's exit code; GitUnreachable when it ran out of time."""
        code = await self.process.wait()
        if self.timed_out:
            raise await self.failure()
        return code

    async def failure(self) -> GitUnreachable:
        """Why git failed: its time ran out, or what it said last."""
        if self.timed_out:
            return GitUnreachable(f"{self.what} took longer than {self.seconds:g} s and was stopped")
        lines = (await self._stderr).decode(errors="replace").strip().splitlines()
        return GitUnreachable(f"{self.what}: {lines[-1]}" if lines else
                              f"{self.what} exited with {self.process.returncode}")

    async def close(self) -> None:
        """Ended if still running (the caller stopped reading early), waited for."""
        if self._timer is not None:
            self._timer.cancel()
        kill(self.process)
        await self.process.wait()
        await self._stderr


async def _tail(stream: asyncio.StreamReader, keep: int = STDERR_KEPT) -> bytes:
    tail = b""
    while chunk := await stream.read(65536):
        tail = (tail + chunk)[-keep:]
    return tail


@contextlib.asynccontextmanager
async def running(argv: Sequence[str], env: Mapping[str, str], *, seconds: float | None,
                  what: str | None = None) -> AsyncIterator[Git]:
    """`async with running(argv, env, seconds=S) as git:` read git.stdout, then `await git.wait()`;
    leaving the block ends git (and its group) if it still runs."""
    git = Git(await start(argv, env), what or describe(argv), seconds)
    try:
        yield git
    finally:
        await git.close()


async def output(argv: Sequence[str], env: Mapping[str, str], *, seconds: float | None, limit: int,
                 ok: tuple[int, ...] = (0,), what: str | None = None) -> tuple[int, bytes]:
    """The exit code (one of `ok`, else GitUnreachable) and stdout; more than `limit` bytes of
    stdout raises OverflowError, the rest unread."""
    async with running(argv, env, seconds=seconds, what=what) as git:
        out = bytearray()  # not bytes +=: an archive comes in thousands of pieces
        while len(out) <= limit and (more := await git.stdout.read(limit + 1 - len(out))):
            out += more
        if len(out) > limit:
            raise OverflowError
        code = await git.wait()
        if code not in ok:
            raise await git.failure()
        return code, bytes(out)
