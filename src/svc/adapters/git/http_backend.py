"""git's smart HTTP, served by the real `git http-backend` (a CGI program) for one request at a time.

The request body is streamed into the program as it arrives (no Content-Length: http-backend reads to
the end, which is what a chunked upload needs) and its output streamed back, so a 20 MB push holds
neither in memory. A gzip request body is inflated by http-backend itself (HTTP_CONTENT_ENCODING);
protocol v2 reaches it as HTTP_GIT_PROTOCOL, as a web server would pass the Git-Protocol header."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from svc.adapters.git import runner
from svc.adapters.git.port import GitUnreachable, HttpRequest, HttpResponse

log = logging.getLogger("svc.git")

_CHUNK = 64 * 1024
_MAX_HEADERS = 64 * 1024


class CgiExchange:
    """`async with CgiExchange(...) as response:` runs http-backend; leaving ends it (killed if the
    client went away before it finished)."""

    def __init__(self, git: str, root: Path, repo_dir_name: str, request: HttpRequest,
                 body: AsyncIterator[bytes], env: Mapping[str, str]) -> None:
        self._argv = [git, "http-backend"]
        self._env = self._cgi_env(root, repo_dir_name, request, env)
        self._body = body
        # A push's body is large: its pipe is widened (others keep the default: every byte of pipe
        # counts against the user's allowance, and git's own pipes need it too).
        self._wide = request.method == "POST" and request.path_info.endswith("/git-receive-pack")
        self._process: asyncio.subprocess.Process | None = None
        self._feeder: asyncio.Task[None] | None = None
        self._stdin = -1  # the write end of http-backend's stdin, while open
        self._writing: Future[None] | None = None  # the write in progress, in a thread of _WRITERS

    @staticmethod
    def _cgi_env(root: Path, repo_dir_name: str, request: HttpRequest, env: Mapping[str, str]) -> dict[str, str]:
        cgi = {
            **env,
            "GIT_PROJECT_ROOT": str(root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "REQUEST_METHOD": request.method,
            "PATH_INFO": f"/{repo_dir_name}{request.path_info}",
            "QUERY_STRING": request.query,
            "REMOTE_ADDR": request.remote_addr or "",
        }
        if request.content_type:
            cgi["CONTENT_TYPE"] = request.content_type
        if request.content_encoding:
            cgi["HTTP_CONTENT_ENCODING"] = request.content_encoding
        if request.git_protocol:
            cgi["HTTP_GIT_PROTOCOL"] = request.git_protocol
        if request.remote_user:
            cgi["REMOTE_USER"] = request.remote_user
        return cgi

    async def __aenter__(self) -> HttpResponse:
        try:
            read_end, self._stdin = os.pipe()
        except OSError as exc:
            raise GitUnreachable(f"git http-backend could not start: {exc}") from exc
        if self._wide:
            with contextlib.suppress(OSError):  # over the user's allowance of pipe memory: the default size
                fcntl.fcntl(self._stdin, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        try:
            # A process group of its own (runner.py): http-backend hands its stdin to receive-pack
            # and index-pack, and an exchange left mid-body ends them all (see __aexit__). No
            # timeout: a transfer lasts as long as its client sends and reads.
            self._process = await runner.start(self._argv, self._env, stdin=read_end, limit=_MAX_HEADERS)
        except BaseException:
            self._close_stdin()
            raise
        finally:
            os.close(read_end)
        self._feeder = asyncio.create_task(self._feed())
        assert self._process.stdout is not None
        try:
            status, headers = await self._read_headers(self._process.stdout)
        except BaseException:
            await self.__aexit__()
            raise
        return HttpResponse(status=status, headers=headers, body=self._stream(self._process))

    async def __aexit__(self, *exc: object) -> None:
        process, self._process = self._process, None
        if process is None:
            return  # ended already
        # Left before the body was in (the client went away), receive-pack and index-pack read it,
        # not http-backend: the whole group is ended, and a write held on the pipe ends with them
        # (EPIPE) and frees its thread. Left before the answer was read: the same.
        runner.kill(process)
        if self._feeder is not None:
            self._feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._feeder
        self._close_stdin()  # the feeder's, unless it was ended before it began
        stderr = b""
        if process.stderr is not None:
            with contextlib.suppress(Exception):
                stderr = await asyncio.wait_for(process.stderr.read(), timeout=5)
        await process.wait()
        if process.returncode not in (0, -9) and stderr.strip():
            log.warning("git http-backend: %s", stderr.decode(errors="replace").strip().splitlines()[-1])

    async def _feed(self) -> None:
        """The body into http-backend's stdin, each chunk written by a thread of the relay's pool with
        a blocking write. http-backend's index-pack reads slower than a client sends, so the pipe is
        full most of a push: written from the event loop, every few KiB it drained was a wake-up of
        svc's loop (add the writer, wait, write, remove it), a third of a 50 MB push's CPU in svc
        (bench/git.py); a blocked thread costs nothing until the whole chunk is in."""
        try:
            async for chunk in self._body:
                if chunk:
                    self._writing = _WRITERS.submit(_write_all, self._stdin, chunk)
                    await asyncio.wrap_future(self._writing)
        except (BrokenPipeError, ConnectionResetError):
            return  # http-backend stopped reading (it refused the request): its answer says why
        finally:
            self._close_stdin()  # the end of the body, for http-backend (it reads to the end)

    def _close_stdin(self) -> None:
        """Once. Left mid-write (the exchange ended, and with it the processes reading the pipe, so
        the write ends at once with EPIPE), the descriptor is the thread's until then, never closed
        under it."""
        fd, self._stdin = self._stdin, -1
        if fd < 0:
            return
        if self._writing is not None and not self._writing.done():
            self._writing.add_done_callback(lambda _: os.close(fd))
        else:
            os.close(fd)

    @staticmethod
    async def _read_headers(stdout: asyncio.StreamReader) -> tuple[int, list[tuple[str, str]]]:
        status, headers = 200, list[tuple[str, str]]()
        while True:
            line = await stdout.readline()
            if not line:
                raise GitUnreachable("git http-backend ended without an answer")
            text = line.decode("latin-1").rstrip("\r\n")
            if not text:
                return status, headers
            name, _, value = text.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split(" ", 1)[0])
            else:
                headers.append((name.strip(), value.strip()))

    @staticmethod
    async def _stream(process: asyncio.subprocess.Process) -> AsyncIterator[bytes]:
        stdout = process.stdout
        assert stdout is not None
        while chunk := await stdout.read(_CHUNK):
            yield chunk


# The pipe into http-backend holds 1 MiB (Linux's default maximum for an unprivileged process) rather
# than 64 KiB: a chunk of the body read from the client (up to 256 KiB) goes in with one write.
_PIPE_BYTES = 1024 * 1024
# Threads that write request bodies into http-backend (one per push in progress; more pushes than
# threads wait their turn, and no other work of svc's waits behind them).
_WRITERS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="svc-git-body")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
