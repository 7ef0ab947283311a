"""aiosqlite's interface without its thread, for SQLite reads.

aiosqlite hands every call (cursor, execute, fetch, close) to a per-connection thread and back:
a thread switch and a GIL hand-over each, about 17 of them for a small authenticated read.
A read in WAL mode never waits for a lock, and SQLite answers it from the page cache in
microseconds, so svc runs its read transactions on the event loop's own thread instead.
Writes keep aiosqlite's thread: they may wait on the write lock (busy_timeout).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Generator
from typing import Any

import aiosqlite


class _RunNow:
    """Stands in for aiosqlite's queue to its thread: runs each queued call at once."""

    def put_nowait(self, item: tuple[asyncio.Future[Any] | None, Callable[[], Any]]) -> None:
        future, function = item
        try:
            result = function()
        except BaseException as exc:  # handed to the awaiting caller, as aiosqlite's thread does
            if future is not None and not future.done():
                future.set_exception(exc)
            return
        if future is not None and not future.done():
            future.set_result(result)


class InlineConnection(aiosqlite.Connection):
    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._tx = _RunNow()  # type: ignore[assignment]

    def __await__(self) -> Generator[Any, None, aiosqlite.Connection]:
        # aiosqlite starts its thread here; there is none to start.
        return self._connect().__await__()


def inline_connector(path: str) -> Callable[[], Any]:
    """An async creator for SQLAlchemy's `async_creator`."""

    async def create() -> InlineConnection:
        conn = InlineConnection(lambda: sqlite3.connect(path, isolation_level=None, check_same_thread=False))
        await conn
        return conn

    return create
