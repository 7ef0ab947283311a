"""adapters/git/hook.py against the gate (gate.py): what a pusher sees from svc's receive hooks, run
as git runs them (the file under the hook's name, by svc's Python without site packages, the ref
changes on stdin), the gate answering on this event loop for a stub gatekeeper."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import svc.adapters.git.hook
from svc.adapters.git.gate import Gate
from svc.adapters.git.port import HookAnswer, Pusher, RefChange, Refused

OLD, NEW = "0" * 40, "a" * 40


@dataclass
class Keeper:
    refuse: str | None = None
    seen: list[tuple[str, list[RefChange]]] = field(default_factory=list)
    incoming: list[int] = field(default_factory=list)

    async def before_push(self, pusher: Pusher, changes: Sequence[RefChange], incoming_bytes: int) -> HookAnswer:
        self.seen.append(("pre", list(changes)))
        self.incoming.append(incoming_bytes)
        if self.refuse:
            raise Refused(self.refuse)
        return HookAnswer([])

    async def after_push(self, pusher: Pusher, changes: Sequence[RefChange]) -> HookAnswer:
        self.seen.append(("post", list(changes)))
        return HookAnswer(["svc: deployed v3", "svc: live at https://site.example.test (ünïcode kept)"])


@dataclass
class Hooks:
    gate: Gate
    keeper: Keeper
    dir: Path

    async def run(self, name: str, stdin: bytes, env: dict[str, str]) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-IS", str(self.dir / name), env=env, stdin=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(process.communicate(stdin), timeout=60)
        assert process.returncode is not None
        return process.returncode, err.decode()


@pytest.fixture
async def hooks(tmp_path: Path) -> AsyncIterator[Hooks]:
    keeper = Keeper()
    gate = Gate(keeper, launch=lambda *_: ([], {}), ensure=lambda *_: None)  # type: ignore[arg-type]
    await gate.start()
    source = Path(svc.adapters.git.hook.__file__).read_text()
    for name in ("pre-receive", "post-receive"):
        (tmp_path / name).write_text(source)
    try:
        yield Hooks(gate, keeper, tmp_path)
    finally:
        await gate.stop()


def pusher() -> Pusher:
    return Pusher(repo_id="repo_1", user_id="user_1", name="Ada", transport="http")


async def test_the_changes_reach_svc_and_its_lines_reach_the_pusher(hooks: Hooks) -> None:
    push = hooks.gate.open_push(pusher())
    stdin = f'{OLD} {NEW} refs/heads/main\n{NEW} {OLD} refs/heads/q"uoted-ü\n'.encode()
    code, said = await hooks.run("post-receive", stdin, hooks.gate.hook_env(push))
    assert code == 0
    assert said == "svc: deployed v3\nsvc: live at https://site.example.test (ünïcode kept)\n"
    assert hooks.keeper.seen == [("post", [RefChange(OLD, NEW, "refs/heads/main"),
                                           RefChange(NEW, OLD, 'refs/heads/q"uoted-ü')])]


async def test_a_refusal_before_the_push_stops_it_with_svcs_words(hooks: Hooks) -> None:
    hooks.keeper.refuse = "svc: the repository o/p/r was deleted"
    push = hooks.gate.open_push(pusher())
    code, said = await hooks.run("pre-receive", f"{OLD} {NEW} refs/heads/main\n".encode(), hooks.gate.hook_env(push))
    assert (code, said) == (1, "svc: the repository o/p/r was deleted\n")
    assert [phase for phase, _ in hooks.keeper.seen] == ["pre"]


async def test_the_pre_receive_hook_tells_what_the_push_brought(hooks: Hooks, tmp_path: Path) -> None:
    """The disk git's quarantine of the push takes (what the org's repository quota counts): its
    allocated blocks, not its files' sizes (a push of many tiny objects takes a block each)."""
    quarantine = tmp_path / "objects" / "tmp_objdir-incoming-x"
    (quarantine / "pack").mkdir(parents=True)
    (quarantine / "pack" / "pack-1.pack").write_bytes(b"p" * 70_000)
    (quarantine / "pack" / "pack-1.idx").write_bytes(b"i" * 1_234)
    push = hooks.gate.open_push(pusher())
    env = {**hooks.gate.hook_env(push), "GIT_QUARANTINE_PATH": str(quarantine)}
    assert (await hooks.run("pre-receive", f"{OLD} {NEW} refs/heads/main\n".encode(), env))[0] == 0
    assert (await hooks.run("pre-receive", f"{NEW} {OLD} refs/heads/main\n".encode(), hooks.gate.hook_env(push))
            )[0] == 0  # a deletion: no quarantine, nothing brought
    blocks = sum(os.lstat(p).st_blocks * 512 for p in (quarantine / "pack", *(quarantine / "pack").iterdir()))
    assert blocks > 71_234
    assert hooks.keeper.incoming == [blocks, 0]


async def test_a_push_svc_did_not_start_is_refused(hooks: Hooks) -> None:
    code, said = await hooks.run("pre-receive", f"{OLD} {NEW} refs/heads/main\n".encode(),
                                 hooks.gate.hook_env("made-up"))
    assert (code, said) == (1, "svc: this push is not one svc started; try again\n")
    assert hooks.keeper.seen == []


async def test_git_without_svcs_environment_is_refused(hooks: Hooks) -> None:
    code, said = await hooks.run("pre-receive", f"{OLD} {NEW} refs/heads/main\n".encode(), {})
    assert (code, said) == (1, "svc: this repository takes pushes through svc only\n")


async def test_a_gate_that_is_gone_is_a_refusal_to_try_again(hooks: Hooks, tmp_path: Path) -> None:
    env = {"SVC_GIT_GATE": str(tmp_path / "no-gate"), "SVC_GIT_PUSH": "x"}
    code, said = await hooks.run("post-receive", f"{OLD} {NEW} refs/heads/main\n".encode(), env)
    assert (code, said) == (1, "svc: the push could not be checked (FileNotFoundError); try again\n")


async def test_a_question_the_gate_cannot_read_is_answered_not_understood(hooks: Hooks) -> None:
    assert hooks.gate.path is not None
    reader, writer = await asyncio.open_unix_connection(str(hooks.gate.path))
    writer.write(b"hook pre\n" + f"{OLD} {NEW} refs/heads/main\n".encode())
    writer.write_eof()
    answer = await asyncio.wait_for(reader.read(), timeout=30)
    writer.close()
    assert answer == b"refused\nsvc: the question was not understood (ValueError)\n"
    assert hooks.keeper.seen == []


async def test_a_ref_name_with_any_unicode_line_separator_is_one_ref(hooks: Hooks) -> None:
    push = hooks.gate.open_push(pusher())
    code, _ = await hooks.run("post-receive", f"{OLD} {NEW} refs/heads/a\u2028b\x85c\n".encode(),
                              hooks.gate.hook_env(push))
    assert code == 0
    assert hooks.keeper.seen == [("post", [RefChange(OLD, NEW, "refs/heads/a\u2028b\x85c")])]


async def test_a_ref_name_that_is_not_utf8_is_refused_in_words(hooks: Hooks) -> None:
    push = hooks.gate.open_push(pusher())
    code, said = await hooks.run("pre-receive", f"{OLD} {NEW} refs/heads/".encode() + b"caf\xe9\n",
                                 hooks.gate.hook_env(push))
    assert (code, said) == (1, "svc: ref names are UTF-8 here, and this push has one that is not\n")
    assert hooks.keeper.seen == []


async def test_a_push_of_too_many_refs_is_told_so(hooks: Hooks) -> None:
    push = hooks.gate.open_push(pusher())
    many = b"".join(f"{OLD} {NEW} refs/tags/release-{i:06d}\n".encode() for i in range(13_000))
    code, said = await hooks.run("pre-receive", many, hooks.gate.hook_env(push))
    assert code == 1
    assert said.startswith("svc: this push updates more refs than svc takes at once")
    assert hooks.keeper.seen == []
