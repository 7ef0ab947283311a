"""adapters/git/runner.py, the one way svc runs git: the environment it gets (no user or system
configuration, the caller's configuration passed), its errors, and its time bound, which ends git
with everything it started (its process group)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path

import pytest

from svc.adapters.git import runner
from svc.adapters.git.port import GitUnavailable, GitUnreachable
from tests.support.wait import until


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie waiting for its parent (nothing runs)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


async def test_a_git_past_its_time_is_killed_with_its_whole_group(tmp_path: Path) -> None:
    """A stand-in for git that starts a child (as upload-pack starts pack-objects) and never ends:
    past its time both are ended, and the call says why."""
    git = tmp_path / "git"
    git.write_text("#!/bin/sh\nsleep 600 &\necho $!\nwait\n")
    git.chmod(0o755)
    child = None
    # The bound starts with the process: on a machine too busy to fork the child within it, nothing
    # was started to leak, so the test tries again with a longer one.
    for seconds in (0.5, 2.0, 8.0, 30.0):
        with pytest.raises(GitUnreachable, match=re.escape(f"git slow took longer than {seconds:g} s")):
            async with runner.running([str(git), "slow"], runner.environment(), seconds=seconds) as run:
                if line := (await run.stdout.readline()).strip():
                    child = int(line)
                    try:
                        await until(lambda: _gone(int(line)), what="the child git started, ended with it")
                    finally:
                        # Left running, it would hold git's pipes open: the block could not end.
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(child, signal.SIGKILL)
                await run.wait()
        if child is not None:
            break
    assert child is not None, "the stand-in never got to start its child"


async def test_git_reads_no_user_or_system_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """svc's own HOME (and a HOME given to git) holds a .gitconfig: git reads none of it, nor the
    GIT_* variables svc runs with (under a hook, say); what the caller configures it reads."""
    (tmp_path / ".gitconfig").write_text("[user]\n\tname = from-the-home\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'user.email'='from-the-environment'")
    # A repository with no configuration of its own (svc's tests run in a checkout, which has one).
    config_list = ["git", "--git-dir", str(tmp_path / "none.git"), "config", "--list"]
    for env in (runner.environment(), runner.environment(home=tmp_path)):
        assert "GIT_CONFIG_PARAMETERS" not in env
        assert await runner.output(config_list, env, seconds=30, limit=1 << 20) == (0, b"")
    env = runner.environment(config={"svc.one": "1", "svc.two": "2"})
    _, out = await runner.output(config_list, env, seconds=30, limit=1 << 20)
    assert out.splitlines() == [b"svc.one=1", b"svc.two=2"]


async def test_a_missing_git_is_unavailable_and_a_failing_one_unreachable_in_its_words(tmp_path: Path) -> None:
    with pytest.raises(GitUnavailable):
        await runner.output([str(tmp_path / "no-git-here"), "status"], runner.environment(), seconds=30, limit=10)
    with pytest.raises(GitUnreachable, match=r"^git rev-parse: fatal: "):
        await runner.output(["git", "--git-dir", str(tmp_path / "none.git"), "rev-parse", "HEAD"],
                            runner.environment(), seconds=30, limit=10)
