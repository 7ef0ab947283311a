"""The node's SSH server: git over SSH (`git clone git@host:org/project/repo.git`), a program svc
runs beside itself through its process supervisor (process.py):

    python -m svc.adapters.git.ssh_server --host H --port P --host-key FILE --gate SOCKET

Public-key authentication only, under any user name (users connect as `git@host`): the key decides.
Every connection asks svc through the node's gate (gate.py) whether its key is known, and every
command what it may run: the git process to start (argv, environment), run with the channel piped
to and from it as bytes, streamed, its exit status handed back. Nothing is cached: a deleted key
stops the very next connection; a gate that does not answer is a refusal. A shell, a pty or any
other command gets one line and exit 1. One line per outcome goes to stderr (the supervisor's
log): address, key fingerprint, command, end; never key material. SIGTERM: stop listening, let
running commands finish for DRAIN_SECONDS, then end them."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import re
import signal
import sys
from collections.abc import Coroutine
from typing import Any

import asyncssh

from svc.adapters.git import runner
from svc.adapters.git.gate import NO_SHELL
from svc.adapters.git.port import GitUnavailable, GitUnreachable

log = logging.getLogger("svc.git.ssh")

CHUNK = 64 * 1024
HIGH_WATER = 256 * 1024  # bytes waiting for git's stdin before the channel stops reading
MAX_ANSWER = 1024 * 1024
KEY_SECONDS = 10.0  # the gate reads the store
EXEC_SECONDS = 60.0  # ... and may make the repository on first access
DONE_SECONDS = 10.0
LOGIN_SECONDS = 30.0
DRAIN_SECONDS = 8.0  # on SIGTERM; below the supervisor's stop_seconds (process.py)
UNCHECKED = "svc: this could not be checked just now; try again"
# What a git client sends as GIT_PROTOCOL ("version=2"); anything else is not passed on.
_GIT_PROTOCOL = re.compile(r"[A-Za-z0-9=:.,_-]{1,100}")


async def ask_gate(gate: str, question: dict[str, Any], seconds: float) -> dict[str, Any] | None:
    """One question to the gate: one JSON line out, one back. None when it did not answer in time
    (or answered nonsense): the caller refuses."""
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_unix_connection(gate, limit=MAX_ANSWER)
            try:
                writer.write(json.dumps(question).encode() + b"\n")
                await writer.drain()
                line = await reader.readline()
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
        answer = json.loads(line)
    except (OSError, TimeoutError, ValueError, asyncio.LimitOverrunError) as exc:
        log.warning("the gate did not answer %s (%s)", question.get("op"), exc.__class__.__name__)
        return None
    return answer if isinstance(answer, dict) else None


class _Connection(asyncssh.SSHServer):
    """One client connection: authenticated by its key, whose fingerprint its commands run under."""

    def __init__(self, server: GitSshServer) -> None:
        self.server = server
        self.peer = "?"
        self.fingerprint: str | None = None  # the last key the gate knew: the one that signs in
        self.offered: dict[str, bool] = {}  # this connection's answers (a key is asked, then signed)
        self.asked_auth = False
        self.authenticated = False

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        peer = conn.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "?"

    def connection_lost(self, exc: Exception | None) -> None:
        # A probe (the supervisor's readiness check) reads the banner and goes: not an outcome.
        if self.asked_auth and not self.authenticated:
            why = "it did not sign in" if any(self.offered.values()) else "no key it offered is known"
            log.info("ssh %s: refused: %s (%d offered)", self.peer, why, len(self.offered))

    def begin_auth(self, username: str) -> bool:
        self.asked_auth = True
        return True  # any user name; the key decides

    def public_key_auth_supported(self) -> bool:
        return True

    async def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        fingerprint = key.get_fingerprint("sha256")
        if fingerprint not in self.offered:
            answer = await ask_gate(self.server.gate, {"op": "ssh-key", "fingerprint": fingerprint}, KEY_SECONDS)
            self.offered[fingerprint] = bool(answer and answer.get("ok") is True)
        if self.offered[fingerprint]:
            self.fingerprint = fingerprint
        return self.offered[fingerprint]

    def auth_completed(self) -> None:
        self.authenticated = True

    def session_requested(self) -> _Session:
        return _Session(self)


class _Session(asyncssh.SSHServerSession[bytes]):
    """One channel: a command and the git process that runs it.

    What the client sends goes to git's stdin as it arrives; past HIGH_WATER waiting there, the
    channel stops reading until git has taken it, and the client waits for window. Paused only
    once the channel has handed over all it holds: asyncssh re-opens the whole window at the next
    delivery even while it still holds data (so its stream API, which pauses mid-delivery, piles
    up most of a large push). What git writes goes out as the channel takes it. A session holds
    about two windows' worth (2 MiB each), whatever the size of the pack."""

    chan: asyncssh.SSHServerChannel[bytes]  # set as the channel opens

    def __init__(self, connection: _Connection) -> None:
        self.connection = connection
        self.command: str | None = None
        self.git: asyncio.subprocess.Process | None = None
        self.stdin: asyncio.StreamWriter | None = None  # git's
        self.early: list[bytes] = []  # what came before git started
        self.eof = self.closed = self.paused = False
        self.writable = asyncio.Event()
        self.writable.set()

    def connection_made(self, chan: asyncssh.SSHServerChannel[bytes]) -> None:
        self.chan = chan

    def pty_requested(self, term_type: str, term_size: tuple[int, int, int, int], term_modes: object) -> bool:
        return False

    def shell_requested(self) -> bool:
        return True  # refused in words once started, as a subsystem is

    def subsystem_requested(self, subsystem: str) -> bool:
        return True

    def exec_requested(self, command: str) -> bool:
        self.command = command
        return True

    def session_started(self) -> None:
        self.connection.server.spawn(self._run())

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if self.stdin is None:
            self.early.append(data)
        elif not self.stdin.is_closing():  # else git is gone: what it did not read goes nowhere
            self.stdin.write(data)
        waiting = self.stdin.transport.get_write_buffer_size() if self.stdin else sum(map(len, self.early))
        if not self.paused and waiting > HIGH_WATER:
            self.paused = True
            asyncio.get_running_loop().call_soon(self._pause)  # once the channel has delivered all it holds

    def eof_received(self) -> bool:
        self.eof = True
        if self.stdin is not None:
            self.stdin.close()  # once what it holds is written
        return True  # half closed: git's answer still goes out

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.writable.set()
        if self.git is not None:
            runner.kill(self.git)

    def _pause(self) -> None:
        if not self.closed:
            self.chan.pause_reading()
        if self.stdin is not None:
            self.connection.server.spawn(self._resume())

    async def _resume(self) -> None:
        """Once git has taken what waits for it, the channel reads again."""
        if self.stdin is not None:
            with contextlib.suppress(OSError):
                await self.stdin.drain()
        self.paused = False
        if not self.closed:
            self.chan.resume_reading()

    def _refuse(self, message: str) -> None:
        if not self.closed:
            with contextlib.suppress(OSError, asyncssh.Error):
                self.chan.write_stderr(message.encode() + b"\n")
                self.chan.exit(1)

    async def _run(self) -> None:
        gate, fingerprint, command = self.connection.server.gate, self.connection.fingerprint, self.command
        who = f"ssh {self.connection.peer} key {fingerprint}"
        if fingerprint is None or not command:
            log.info("%s: refused: %s", who, "no command (a shell or a subsystem)" if fingerprint else "no key")
            self._refuse(NO_SHELL)
            return
        answer = await ask_gate(gate, {"op": "ssh-exec", "fingerprint": fingerprint, "command": command},
                                EXEC_SECONDS)
        if answer is None or answer.get("ok") is not True or not answer.get("argv"):
            message = str(answer.get("message") or UNCHECKED) if answer is not None else UNCHECKED
            log.info("%s: refused %r: %s", who, command[:200], message)
            self._refuse(message)
            return
        push = answer.get("push")
        try:
            code = await self._git([str(a) for a in answer["argv"]], self._environment(answer))
            log.info("%s: %r: %s", who, command[:200], "client gone" if code is None else f"exit status {code}")
        finally:
            if push:
                await ask_gate(gate, {"op": "ssh-done", "push": str(push)}, DONE_SECONDS)

    def _environment(self, answer: dict[str, Any]) -> dict[str, str]:
        """The gate's environment for git (complete: svc's hooks, its gate, a clean git config), and the
        protocol the client asked for (git sends GIT_PROTOCOL=version=2 with SSH's env request)."""
        env = runner.environment()  # under the gate's, which sets them all (LocalGitNode.environment)
        if isinstance(given := answer.get("env"), dict):
            env.update({str(k): str(v) for k, v in given.items()})
        protocol = self.chan.get_environment().get("GIT_PROTOCOL")
        if isinstance(protocol, str) and _GIT_PROTOCOL.fullmatch(protocol):
            env["GIT_PROTOCOL"] = protocol
        return env

    async def _git(self, argv: list[str], env: dict[str, str]) -> int | None:
        """git with the channel piped to and from it; its exit status (None: the client went first)."""
        try:
            # Its own process group (runner.py): ended, it ends what it started (pack-objects,
            # index-pack). No timeout: a transfer lasts as long as its client sends and reads.
            git = await runner.start(argv, env, stdin=runner.PIPE)
        except (GitUnavailable, GitUnreachable) as exc:
            log.error("git could not be started: %s", exc)
            self._refuse("svc: git could not be started here; try again")
            return 1
        assert git.stdin is not None and git.stdout is not None and git.stderr is not None
        self.git, self.stdin = git, git.stdin
        git.stdin.writelines(self.early)
        self.early.clear()
        if self.eof:
            git.stdin.close()
        if self.paused:
            self.connection.server.spawn(self._resume())
        try:
            if self.closed:
                raise BrokenPipeError
            await asyncio.gather(self._send(git.stdout, None), self._send(git.stderr, asyncssh.EXTENDED_DATA_STDERR))
            code = await git.wait()
        except (OSError, asyncssh.Error):
            return None  # the channel went under it
        finally:
            if git.returncode is None:  # that, or svc stopping: git is ended
                runner.kill(git)
                await git.wait()
        if self.closed:
            return None
        with contextlib.suppress(OSError, asyncssh.Error):
            self.chan.exit(code if code >= 0 else 128 - code)
        return code

    async def _send(self, pipe: asyncio.StreamReader, datatype: asyncssh.DataType) -> None:
        while data := await pipe.read(CHUNK):
            await self.writable.wait()
            if not self.closed:  # else git is being ended: what it still says goes nowhere
                self.chan.write(data, datatype)


class GitSshServer:
    """The server's state: the gate it asks, the sessions running (ended on stop)."""

    def __init__(self, gate: str) -> None:
        self.gate = gate
        self._tasks: set[asyncio.Task[None]] = set()

    def connection(self) -> _Connection:
        return _Connection(self)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a session failed", exc_info=task.exception())

    async def drain(self, seconds: float) -> None:
        """Until the running sessions end, at most `seconds`; then they are cancelled (their git ended)."""
        if self._tasks:
            _, left = await asyncio.wait(set(self._tasks), timeout=seconds)
            for task in left:
                task.cancel()
            if left:
                await asyncio.wait(left, timeout=2.0)


async def serve(host: str, port: int, host_key: str, gate: str) -> None:
    key = asyncssh.read_private_key(host_key)
    server = GitSshServer(gate)
    acceptor = await asyncssh.create_server(
        server.connection, host, port, server_host_keys=[key], encoding=None, allow_pty=False,
        agent_forwarding=False, x11_forwarding=False, allow_scp=False, password_auth=False, kbdint_auth=False,
        host_based_auth=False, gss_host=None, login_timeout=LOGIN_SECONDS, keepalive_interval=30, keepalive_count_max=4)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    log.info("git over SSH on %s:%d (host key %s)", host, port, key.get_fingerprint("sha256"))
    await stopping.wait()
    acceptor.close()
    await server.drain(DRAIN_SECONDS)
    log.info("stopped")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m svc.adapters.git.ssh_server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--host-key", required=True, help="the host key (OpenSSH private key file)")
    parser.add_argument("--gate", required=True, help="the node's gate (a Unix socket)")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    try:
        asyncio.run(serve(args.host, args.port, args.host_key, args.gate))
    except (OSError, asyncssh.Error, ValueError) as exc:
        log.error("fatal: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
