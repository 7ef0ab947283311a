"""The upload path: the request body, chunk by chunk as it arrives, goes through sha256 and into a
temporary file (the bytes the blob store keeps) on the event loop, and through the validating
extractor (bundle.py) in a worker thread of its own that unpacks into a staging directory.

Never more than MAX_PENDING chunks wait for the extractor, so memory stays bounded whatever the
body's size, and the first error (a bound passed, a refused entry) ends the upload at once: the
client gets its 413 or 400 while still sending. Any failure removes the staging directory and
the temporary file; a killed process leaves them to `artifacts.sweep_partials`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections import deque
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from svc.context import AppContext
from svc.domains.deployments import artifacts
from svc.domains.deployments.bundle import Extractor, Unpacked, too_large
from svc.kit.files import remove_path

MAX_PENDING = 8
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


@dataclass
class Received:
    """A complete, valid upload: its digest, the raw body in `bundle`, the files in `staging`."""

    digest: str
    size: int
    bundle: Path
    staging: Path
    unpacked: Unpacked

    async def discard(self) -> None:
        """Remove the temporary file and what is left of the staging directory."""
        await asyncio.to_thread(_remove, self.bundle, self.staging)


def _remove(*paths: Path) -> None:
    for p in paths:
        remove_path(p)


class _Pipeline:
    """Feeds the extractor in order on one worker thread, with at most MAX_PENDING chunks queued."""

    def __init__(self, extractor: Extractor) -> None:
        self._extractor = extractor
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-ingest")
        self._pending: deque[asyncio.Future[None]] = deque()
        self._loop = asyncio.get_running_loop()

    async def feed(self, chunk: bytes) -> None:
        self._pending.append(self._loop.run_in_executor(self._pool, self._extractor.feed, chunk))
        # Raise the extractor's first error as soon as it is known; wait when the queue is full.
        while self._pending and (self._pending[0].done() or len(self._pending) > MAX_PENDING):
            await self._pending.popleft()

    async def finish(self) -> Unpacked:
        while self._pending:
            await self._pending.popleft()
        return await self._loop.run_in_executor(self._pool, self._extractor.finish)

    async def stop(self) -> None:
        """Drop queued chunks and wait until the worker is idle: nothing writes to staging after."""
        for f in self._pending:
            if f.done():
                if not f.cancelled():
                    f.exception()  # retrieved: the first error has been raised already
            else:
                f.cancel()
        self._pending.clear()
        try:
            await self._loop.run_in_executor(self._pool, self._extractor.close)
        finally:
            self._pool.shutdown(wait=False)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False)


async def receive(ctx: AppContext, body: AsyncIterator[bytes]) -> Received:
    """Stream `body` into a staging directory and a temporary file, validating as it goes."""
    bounds = artifacts.limits(ctx.config)
    staging = artifacts.new_staging(ctx)
    bundle = artifacts.new_tmp_file(ctx.config, "upload")
    fd = -1
    pipeline: _Pipeline | None = None
    try:
        fd = os.open(bundle, _FLAGS, 0o600)
        pipeline = _Pipeline(Extractor(staging, bounds))
        hasher = hashlib.sha256()
        size = 0
        async for chunk in body:
            if not chunk:
                continue
            size += len(chunk)
            if size > bounds.compressed:
                raise too_large("compressed", bounds.compressed)
            hasher.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            await pipeline.feed(chunk)
        unpacked = await pipeline.finish()
        pipeline.shutdown()
        return Received(digest=f"sha256:{hasher.hexdigest()}", size=size, bundle=bundle, staging=staging,
                        unpacked=unpacked)
    except BaseException:
        # Shielded: a cancelled request still cleans up before its task ends.
        await asyncio.shield(_abandon(pipeline, bundle, staging))
        raise
    finally:
        if fd >= 0:
            os.close(fd)


async def _abandon(pipeline: _Pipeline | None, bundle: Path, staging: Path) -> None:
    if pipeline is not None:
        with contextlib.suppress(Exception):
            await pipeline.stop()
    await asyncio.to_thread(_remove, bundle, staging)
