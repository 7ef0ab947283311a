"""The node's gate: a Unix socket through which git's receive hooks and the node's SSH server ask
svc (the `GitGatekeeper`). One question per connection. The receive hooks ask in text (they start
twice a push: no json to import, hook.py), git's own stdin passed on as it is, the end of the
question the end of what they send:

    hook pre ID BYTES\n<old> <new> <ref>\n...   -> ok|refused\n<a line for the pusher>\n...
    hook post ID\n<old> <new> <ref>\n...        (the same answer)

(BYTES: what the push brought, measured by the hook in git's quarantine of it.)

The SSH server asks in JSON, one object per line each way:

    {"op": "ssh-key", "fingerprint": F}                       -> {"ok": bool}
    {"op": "ssh-exec", "fingerprint": F, "command": "git-upload-pack 'org/p/r.git'"}
        -> {"ok": true, "argv": [...], "env": {...}, "push": ID | null} | {"ok": false, "message": str}
    {"op": "ssh-done", "push": ID}                            -> {"ok": true}

A socket file in a directory only svc's user can enter, rather than a loopback port with a secret:
nothing else on the machine can reach it, and each replica's hooks reach the replica that runs
their push. A push is known by a random id handed to git in its environment (SVC_GIT_PUSH), which
names who pushes; it lives as long as the request or SSH session that carries it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import shlex
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from svc.adapters.git.port import GitGatekeeper, GitService, Pusher, RefChange, Refused, SshAccess

log = logging.getLogger("svc.git")

# What SSH says to anything but git's own commands (a shell, a pty, `ssh host ls`).
NO_SHELL = "svc runs git over SSH only (git clone, fetch and push); there is no shell here"
MAX_QUESTION = 1024 * 1024  # a push of many refs still fits
# A question comes from svc's own hooks and SSH server, at once; one that does not is let go.
QUESTION_SECONDS = 30.0
_SERVICES: dict[str, GitService] = {"git-upload-pack": "upload-pack", "git-receive-pack": "receive-pack",
                                    "git upload-pack": "upload-pack", "git receive-pack": "receive-pack"}

# What a git process of the node runs with, given the repository's directory, the service, the
# push id and the bytes the push may bring (receive-pack only): argv and the environment's additions.
Launch = Callable[[str, GitService, "str | None", "int | None"], "tuple[list[str], dict[str, str]]"]


def parse_ssh_command(command: str) -> tuple[GitService, str]:
    """"git-upload-pack 'org/p/r.git'" -> ("upload-pack", "org/p/r.git"); Refused for anything else."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    if len(words) == 3 and words[0] == "git":
        words = [f"git {words[1]}", words[2]]
    if len(words) != 2 or words[0] not in _SERVICES:
        raise Refused(NO_SHELL)
    return _SERVICES[words[0]], words[1].strip("/")


class Gate:
    def __init__(self, gatekeeper: GitGatekeeper, launch: Launch,
                 ensure: Callable[[str, str], Any]) -> None:
        self.gatekeeper = gatekeeper
        self._launch = launch
        self._ensure = ensure
        self._pushes: dict[str, Pusher] = {}
        self._admitted: set[str] = set()  # pushes the gatekeeper counts as in flight
        self._server: asyncio.AbstractServer | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self.path: Path | None = None

    async def start(self) -> None:
        # A short path of its own (a socket's path is limited to ~100 bytes), mode 0700.
        self._dir = tempfile.TemporaryDirectory(prefix="svc-git-")
        self.path = Path(self._dir.name) / "gate"
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=MAX_QUESTION)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def open_push(self, pusher: Pusher) -> str:
        push = secrets.token_urlsafe(18)
        self._pushes[push] = pusher
        return push

    async def admit(self, push: str, *, receiving: bool) -> int:
        """The bytes the push may bring (Refused: none, in words). `receiving`: git reads its pack
        now, and it counts as in flight until close_push; else (git's first HTTP request of a push,
        which lists the refs) it is only asked, so a push refused is told before it sends."""
        pusher = self._pushes[push]
        allowance = await self.gatekeeper.admit_push(pusher, push if receiving else None)
        if receiving:
            self._admitted.add(push)
        return allowance

    def close_push(self, push: str | None) -> None:
        if push is not None:
            self._pushes.pop(push, None)
            if push in self._admitted:
                self._admitted.discard(push)
                self.gatekeeper.push_ended(push)

    def hook_env(self, push: str | None) -> dict[str, str]:
        """What git's hooks need to find this gate and their push."""
        assert self.path is not None, "the gate is started with the node"
        env = {"SVC_GIT_GATE": str(self.path)}
        if push is not None:
            env["SVC_GIT_PUSH"] = push
        return env

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(await self._reply(reader))
            await writer.drain()
        finally:
            writer.close()

    async def _reply(self, reader: asyncio.StreamReader) -> bytes:
        """The answer to one question: in text to a hook, in JSON to the SSH server."""
        try:
            async with asyncio.timeout(QUESTION_SECONDS):
                line = await reader.readline()
            if line.startswith(b"hook "):
                ok, lines = await self._hook_in_text(line, reader)
                return ("ok\n" if ok else "refused\n").encode() + "".join(f"{said}\n" for said in lines).encode()
            answer = await self._answer(json.loads(line))
        except (ValueError, asyncio.LimitOverrunError, TimeoutError) as exc:
            answer = {"ok": False, "message": _not_understood(exc)}
        except Exception:
            log.exception("the git gate failed to answer")
            answer = {"ok": False, "message": _INTERNAL_ERROR}
        return json.dumps(answer).encode() + b"\n"

    async def _hook_in_text(self, first: bytes, reader: asyncio.StreamReader) -> tuple[bool, list[str]]:
        """A hook's question, after its first line: whether the push may go on, and the lines for
        the pusher."""
        try:
            words = first.decode().split()
            phase, push = words[1:3] if len(words) in (3, 4) else ("", "")
            if (phase, len(words)) not in (("pre", 4), ("post", 3)):
                raise ValueError("a hook asks 'hook pre ID BYTES' or 'hook post ID'")
            incoming = int(words[3]) if phase == "pre" else 0
            async with asyncio.timeout(QUESTION_SECONDS):
                changes = await _read_changes(reader)
            return await self._hook(phase, push, changes, incoming)
        except _TooMany:
            return False, [f"svc: this push updates more refs than svc takes at once (over "
                           f"{MAX_QUESTION // (1024 * 1024)} MiB of them); push them in parts"]
        except UnicodeDecodeError:
            return False, ["svc: ref names are UTF-8 here, and this push has one that is not"]
        except (ValueError, TypeError, TimeoutError) as exc:
            return False, [_not_understood(exc)]
        except Exception:
            log.exception("the git gate failed to answer")
            return False, [_INTERNAL_ERROR]

    async def _answer(self, ask: Mapping[str, Any]) -> dict[str, Any]:
        op = ask.get("op")
        if op == "ssh-key":
            return {"ok": await self.gatekeeper.ssh_key_known(str(ask.get("fingerprint", "")))}
        if op == "ssh-exec":
            return await self._ssh_exec(str(ask.get("fingerprint", "")), str(ask.get("command", "")))
        if op == "ssh-done":
            self.close_push(str(ask.get("push") or ""))
            return {"ok": True}
        return {"ok": False, "message": f"svc: no such question: {op!r}"}

    async def _hook(self, phase: str, push: str, changes: list[RefChange], incoming: int) -> tuple[bool, list[str]]:
        pusher = self._pushes.get(push)
        if pusher is None:
            return False, ["svc: this push is not one svc started; try again"]
        try:
            if phase == "pre":
                said = await self.gatekeeper.before_push(pusher, changes, incoming)
            else:
                said = await self.gatekeeper.after_push(pusher, changes)
        except Refused as exc:
            return False, [str(exc)]
        return True, said.lines

    async def _ssh_exec(self, fingerprint: str, command: str) -> dict[str, Any]:
        try:
            service, path = parse_ssh_command(command)
            access: SshAccess = await self.gatekeeper.authorize_ssh(fingerprint, service, path)
        except Refused as exc:
            return {"ok": False, "message": str(exc)}
        await self._ensure(access.repo_id, access.default_branch)
        push, allowance = None, None
        if access.pusher is not None:
            push = self.open_push(access.pusher)
            try:
                allowance = await self.admit(push, receiving=True)
            except Refused as exc:
                self.close_push(push)
                return {"ok": False, "message": str(exc)}
            except BaseException:
                self.close_push(push)
                raise
        argv, env = self._launch(access.repo_id, service, push, allowance)
        return {"ok": True, "argv": argv, "env": env, "push": push}


_INTERNAL_ERROR = "svc: an internal error stopped this; try again"


def _not_understood(exc: BaseException) -> str:
    return f"svc: the question was not understood ({exc.__class__.__name__})"


class _TooMany(Exception):
    """A hook's question over MAX_QUESTION."""


async def _read_changes(reader: asyncio.StreamReader) -> list[RefChange]:
    """What a hook sends after its first line, to its end: git's "<old> <new> <ref>" lines. Past
    MAX_QUESTION the rest is read and dropped (so the hook is there to read the refusal), then
    _TooMany. Lines end at LF alone: git's, whatever else a ref name holds."""
    data = b""
    while chunk := await reader.read(64 * 1024):
        if len(data) <= MAX_QUESTION:
            data += chunk
    if len(data) > MAX_QUESTION:
        raise _TooMany
    return [RefChange(*line.decode().split(" ", 2)) for line in data.split(b"\n") if line.strip()]
