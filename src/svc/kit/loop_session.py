"""SQLite reads on the event loop's thread, without SQLAlchemy's asyncio layer.

A read in WAL mode never waits for a lock, and SQLite answers it from the page cache in
microseconds. Running it through the asyncio extension costs far more than that: a greenlet per
statement, aiosqlite's hand-over of every DBAPI call, an awaitable per call. So on SQLite a read
request's session is a `LoopReadSession`: an `AsyncSession` (the type every queries module takes)
whose statements run directly on an ordinary `Session` bound to a synchronous pysqlite engine.
Writes run on the loop's thread too (`LoopWriteSession`), waiting for the write lock with an
asyncio.Lock and an async retry rather than SQLite's busy_timeout, which would block the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, Executable, Row, util
from sqlalchemy.engine import Result, ScalarResult
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import Session

from svc.kit.store_session import StoreSession

_BUFFERED = util.immutabledict({"prebuffer_rows": True})  # what AsyncSession asks for: rows read at once


def _options(execution_options: Any) -> Any:
    return util.immutabledict(execution_options).union(_BUFFERED) if execution_options else _BUFFERED


class PlainReader:
    """Plain rows of Core statements, on one connection per thread kept for the purpose. A
    statement runs and all its rows are fetched in one synchronous call, so no two reads ever
    share the connection at once, and a read costs no pool checkout. In autocommit, a statement's
    read snapshot ends with its last row: a kept connection holds nothing between reads."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._local = threading.local()
        self._opened: list[Connection] = []
        self._lock = threading.Lock()

    def rows(self, statement: Executable, params: Mapping[str, Any] | None = None) -> Sequence[Row[Any]]:
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.engine.connect()
            with self._lock:
                self._opened.append(conn)
            self._local.conn = conn
        return conn.execute(statement, params).all()

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()
        self._local = threading.local()


class _OnTheLoop(StoreSession):
    """The statement methods queries use (execute, scalar, scalars, get), run on a synchronous
    Session on the event loop's thread; `_ready` runs first."""

    async def _ready(self) -> None:
        """Before a statement: nothing for a read (LoopWriteSession begins its transaction)."""

    async def execute(self, statement: Any, params: Any = None, *, execution_options: Any = util.EMPTY_DICT,
                      bind_arguments: Any = None, **kw: Any) -> Result[Any]:
        await self._ready()
        return self.sync_session.execute(statement, params, execution_options=_options(execution_options),
                                         bind_arguments=bind_arguments, **kw)

    async def scalar(self, statement: Any, params: Any = None, *, execution_options: Any = util.EMPTY_DICT,
                     bind_arguments: Any = None, **kw: Any) -> Any:
        await self._ready()
        return self.sync_session.scalar(statement, params, execution_options=_options(execution_options),
                                        bind_arguments=bind_arguments, **kw)

    async def scalars(self, statement: Any, params: Any = None, *, execution_options: Any = util.EMPTY_DICT,
                      bind_arguments: Any = None, **kw: Any) -> ScalarResult[Any]:
        return (await self.execute(statement, params, execution_options=execution_options,
                                   bind_arguments=bind_arguments, **kw)).scalars()

    async def get(self, entity: Any, ident: Any, *, options: Sequence[Any] | None = None,
                  populate_existing: bool | None = None, with_for_update: Any = None,
                  identity_token: Any = None, execution_options: Any = util.EMPTY_DICT) -> Any:
        await self._ready()
        return self.sync_session.get(entity, ident, options=options, populate_existing=populate_existing,
                                     with_for_update=with_for_update, identity_token=identity_token,
                                     execution_options=execution_options)


class LoopReadSession(_OnTheLoop):
    """The methods read paths use (execute, scalar, scalars, get) run synchronously, with no await
    point inside; run_sync, refresh and the like still work through AsyncSession's greenlet, on
    the same engine. There is no AsyncConnection to hand out (the driver is not async): use
    execute(), or svc.db.plain_rows() for Core statements."""

    def __init__(self, reader: PlainReader, *, sync_session_class: type[Session], **kw: Any) -> None:
        super().__init__(sync_session_class=sync_session_class, **kw)
        self.sync_session.bind = reader.engine
        self.plain_reader = reader

    async def connection(self, bind_arguments: Any = None, execution_options: Any = None,
                         **kw: Any) -> AsyncConnection:
        raise NotImplementedError("An SQLite read session has no AsyncConnection: use execute() or plain_rows()")

    async def close(self) -> None:
        sync = self.sync_session
        if sync.in_transaction() or len(sync.identity_map) or sync.new or sync.deleted:
            sync.close()  # a request that read only plain rows never used it: nothing to close


class LoopWriteSession(_OnTheLoop):
    """SQLite writes on the event loop's thread: each statement costs what SQLite costs (tens of
    microseconds) instead of a greenlet and two thread hand-overs (about 0.4 ms, bench/dns_bench.py).

    What made writes go to aiosqlite's thread is that BEGIN IMMEDIATE may wait for the write lock
    (busy_timeout), which must not block the loop. Here the wait is async: the writers of this
    process take turns on an asyncio.Lock first (SQLite serialises writers anyway), then BEGIN
    IMMEDIATE is tried without waiting and, while another process writes (`svc admin`), tried
    again after an `asyncio.sleep`. Inside the transaction no statement waits: the lock is held.
    The transaction begins at the first statement; the turn ends with the commit, the rollback
    or the close."""

    BEGIN_PATIENCE = 30.0  # seconds another process may hold the write lock before we give up

    def __init__(self, engine: Engine, turn: asyncio.Lock, *, sync_session_class: type[Session],
                 **kw: Any) -> None:
        super().__init__(sync_session_class=sync_session_class, **kw)
        self.sync_session.bind = engine
        self._turn = turn
        self._holding = False

    async def _ready(self) -> None:
        """Begin the transaction in this process's turn, waiting (async) for another process's lock."""
        if self._holding:
            return
        try:
            # Bounded like SQLite's own wait was: a writer stalled inside its transaction (a client
            # that never sends its body) fails the others after BEGIN_PATIENCE, not never.
            async with asyncio.timeout(self.BEGIN_PATIENCE):
                await self._turn.acquire()
        except TimeoutError:
            raise TimeoutError(f"no turn to write to the store within {self.BEGIN_PATIENCE:.0f}s") from None
        self._holding = True
        delay, waited = 0.002, 0.0
        while True:
            try:
                self.sync_session.connection()  # BEGIN IMMEDIATE (the engine's begin hook)
                return
            except OperationalError as exc:
                self.sync_session.rollback()
                if "locked" not in str(exc) or waited > self.BEGIN_PATIENCE:
                    self._release()
                    raise
            await asyncio.sleep(delay)
            waited += delay
            delay = min(delay * 2, 0.1)

    def _release(self) -> None:
        if self._holding:
            self._holding = False
            self._turn.release()

    async def flush(self, objects: Sequence[Any] | None = None) -> None:
        await self._ready()
        self.sync_session.flush(objects)

    async def delete(self, instance: object) -> None:
        await self._ready()
        self.sync_session.delete(instance)

    async def refresh(self, instance: object, attribute_names: Iterable[str] | None = None,
                      with_for_update: Any = None) -> None:
        await self._ready()
        self.sync_session.refresh(instance, attribute_names=attribute_names, with_for_update=with_for_update)

    async def merge(self, instance: Any, *, load: bool = True, options: Sequence[Any] | None = None) -> Any:
        await self._ready()
        return self.sync_session.merge(instance, load=load, options=options)

    async def connection(self, bind_arguments: Any = None, execution_options: Any = None,
                         **kw: Any) -> AsyncConnection:
        raise NotImplementedError("An SQLite write session has no AsyncConnection: use execute()")

    def begin_nested(self) -> Any:  # type: ignore[override]
        """A savepoint; the transaction around it begins (with this process's turn) first."""
        return self._nested()

    @contextlib.asynccontextmanager
    async def _nested(self) -> AsyncIterator[Any]:
        await self._ready()
        async with AsyncSession.begin_nested(self) as savepoint:
            yield savepoint

    async def finish(self, *, commit: bool) -> None:
        try:
            if commit:
                sync = self.sync_session
                if sync.new or sync.dirty or sync.deleted:
                    await self._ready()  # objects only added so far: the commit's flush writes them
                sync.commit()
            else:
                self.sync_session.rollback()
        finally:
            self._release()

    async def close(self) -> None:
        try:
            self.sync_session.close()
        finally:
            self._release()
