"""adapters/git/http_backend.py: a request body relayed into a CGI program that reads it slowly, or
stops reading, or is left before the body is in (the client went away)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from svc.adapters.git.http_backend import CgiExchange
from svc.adapters.git.port import HttpRequest
from tests.support.wait import WAIT_SECONDS

# More than the pipe holds (1 MiB): the writing thread is held until the program reads.
CHUNK = 4 * 1024 * 1024
REQUEST = HttpRequest(method="POST", path_info="/git-receive-pack", query="", content_type=None,
                      content_encoding=None, git_protocol=None, remote_user=None, remote_addr="127.0.0.1")


def program(tmp_path: Path, body: str) -> str:
    """A stand-in for git, run as `<it> http-backend`: a shell script answering as CGI does."""
    path = tmp_path / "git"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


async def chunks(count: int) -> AsyncIterator[bytes]:
    for i in range(count):
        yield bytes([i % 256]) * CHUNK


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def until(condition: object, seconds: float = WAIT_SECONDS) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def test_the_whole_body_reaches_the_program_in_order(tmp_path: Path) -> None:
    received = tmp_path / "received"
    git = program(tmp_path, f"cat > {received}\nprintf 'Status: 201 Created\\r\\nX-Seen: yes\\r\\n\\r\\nstored'")
    async with CgiExchange(git, tmp_path, "r.git", REQUEST, chunks(3), {"PATH": os.defpath}) as answer:
        assert answer.status == 201
        assert ("X-Seen", "yes") in answer.headers
        assert b"".join([part async for part in answer.body]) == b"stored"
    assert received.read_bytes() == b"".join(bytes([i]) * CHUNK for i in range(3))


async def test_a_program_that_stops_reading_gives_its_answer(tmp_path: Path) -> None:
    """http-backend refusing a request answers without reading the body: the relay stops, quietly."""
    git = program(tmp_path, "head -c 10 > /dev/null\nprintf 'Status: 403 Forbidden\\r\\n\\r\\nno'")
    before = open_descriptors()
    async with CgiExchange(git, tmp_path, "r.git", REQUEST, chunks(8), {"PATH": os.defpath}) as answer:
        assert answer.status == 403
        assert b"".join([part async for part in answer.body]) == b"no"
    await until(lambda: open_descriptors() <= before)


async def test_leaving_while_a_write_is_held_ends_it_and_keeps_no_descriptor(tmp_path: Path) -> None:
    """The client gone mid-body: the program is ended with the children it handed its stdin to (as
    http-backend hands it to receive-pack), the thread's write ends with them, and the pipe is
    closed once (after the write, never under it)."""
    git = program(tmp_path, "sleep 60 <&0 &\nprintf 'Status: 200 OK\\r\\n\\r\\n'\nwait")
    before = open_descriptors()
    async with asyncio.timeout(30):
        async with CgiExchange(git, tmp_path, "r.git", REQUEST, chunks(100), {"PATH": os.defpath}) as answer:
            assert answer.status == 200
    await until(lambda: open_descriptors() <= before)


@pytest.mark.parametrize("missing", ["no-such-git", "not-executable"])
async def test_a_program_that_cannot_start_leaks_no_pipe(tmp_path: Path, missing: str) -> None:
    """Missing, it is GitUnavailable (git is not installed: runner.py); there but unable to start,
    GitUnreachable."""
    from svc.adapters.git.port import GitUnavailable, GitUnreachable

    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    before = open_descriptors()
    with pytest.raises(GitUnavailable if missing == "no-such-git" else GitUnreachable):
        async with CgiExchange(str(tmp_path / missing), tmp_path, "r.git", REQUEST, chunks(1), {}):
            pass
    assert open_descriptors() == before
