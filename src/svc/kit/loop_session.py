"""SQLite sessions whose statements run on the event loop's thread, on SQLAlchemy's ordinary `Session`.

A read in WAL mode never waits for a lock, and SQLite answers it from the page cache in
microseconds. Running it through the asyncio extension costs far more than that: a greenlet per
statement, aiosqlite's hand-over of every DBAPI call, an awaitable per call. So on SQLite a
StoreSession (kit/store_session.py) calls an ordinary `Session` bound to a synchronous pysqlite
engine directly: `LoopReadSession` for reads (autocommit: each statement sees the latest commit),
`LoopWriteSession` for writes, which waits for the write lock with an asyncio.Lock and an async
retry rather than SQLite's busy_timeout, which would block the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Connection, CursorResult, Engine, Executable, Result, Row, ScalarResult
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from svc.kit.store_session import AnyRow, Options, Params, StoreConnection, StoreSession

_O = TypeVar("_O", bound=object)
# ORM objects are made from every row when the statement runs, not as the result is read: what a
# result holds does not depend on when the use case reads it (AsyncSession's own option, so both
# StoreSessions agree; tests/store/test_store_session_contract.py).
_READ_AT_ONCE: Mapping[str, Any] = {"prebuffer_rows": True}


def _options(execution_options: Options) -> Mapping[str, Any]:
    return _READ_AT_ONCE if not execution_options else {**execution_options, **_READ_AT_ONCE}


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


class _LoopConnection(StoreConnection):
    def __init__(self, conn: Connection) -> None:
        super().__init__(conn.dialect)
        self._conn = conn

    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> CursorResult[*AnyRow]:
        return self._conn.execute(statement, params, execution_options=execution_options)

    async def exec_driver_sql(self, statement: str, params: Any = None) -> CursorResult[*AnyRow]:
        return self._conn.exec_driver_sql(statement, params)


class _OnTheLoop(StoreSession):
    """The StoreSession methods, each a direct call of an ordinary `Session` (made at its first
    use: a read of plain rows only never needs one). `_ready` runs before anything that may run
    a statement."""

    def __init__(self, engine: Engine, make_session: Callable[[], Session]) -> None:
        super().__init__(engine.dialect)
        self._make_session = make_session
        self._orm: Session | None = None

    def _session(self) -> Session:
        orm = self._orm
        if orm is None:
            orm = self._orm = self._make_session()
        return orm

    async def _ready(self) -> Session:
        """The session, ready for a statement (LoopWriteSession begins its transaction first)."""
        return self._session()

    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> Result[*AnyRow]:
        return (await self._ready()).execute(statement, params, execution_options=_options(execution_options))

    async def scalar(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                     execution_options: Options = None) -> Any:
        return (await self._ready()).scalar(statement, params, execution_options=_options(execution_options))

    async def scalars(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                      execution_options: Options = None) -> ScalarResult[Any]:
        return (await self._ready()).scalars(statement, params, execution_options=_options(execution_options))

    async def get(self, entity: type[_O], ident: Any, *, with_for_update: bool = False,
                  populate_existing: bool = False) -> _O | None:
        return (await self._ready()).get(entity, ident, with_for_update=with_for_update or None,
                                         populate_existing=populate_existing or with_for_update or None)

    def add(self, instance: object) -> None:
        self._session().add(instance)

    def expunge(self, instance: object) -> None:
        self._session().expunge(instance)

    async def flush(self) -> None:
        (await self._ready()).flush()

    async def delete(self, instance: object) -> None:
        (await self._ready()).delete(instance)

    async def refresh(self, instance: object, attribute_names: Iterable[str] | None = None,
                      with_for_update: bool = False) -> None:
        (await self._ready()).refresh(instance, attribute_names, with_for_update=with_for_update or None)

    async def merge(self, instance: _O, *, load: bool = True) -> _O:
        return (await self._ready()).merge(instance, load=load)

    @contextlib.asynccontextmanager
    async def begin_nested(self) -> AsyncIterator[None]:
        """A savepoint; the transaction around it begins (with this process's turn to write) first."""
        with (await self._ready()).begin_nested():
            yield

    async def connection(self) -> StoreConnection:
        return _LoopConnection((await self._ready()).connection())


class LoopReadSession(_OnTheLoop):
    """SQLite reads: every statement runs synchronously, in autocommit, with no await point inside.
    `plain_reader` serves svc.db.plain_rows (Core rows without the ORM session)."""

    def __init__(self, reader: PlainReader, make_session: Callable[[], Session]) -> None:
        super().__init__(reader.engine, make_session)
        self.plain_reader = reader

    async def finish(self, *, commit: bool) -> None:
        orm = self._orm
        if orm is not None:
            if commit:
                orm.commit()
            else:
                orm.rollback()

    async def close(self) -> None:
        orm = self._orm
        if orm is not None:  # a request that read only plain rows never made one
            orm.close()


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

    def __init__(self, engine: Engine, turn: asyncio.Lock, make_session: Callable[[], Session]) -> None:
        super().__init__(engine, make_session)
        self._turn = turn
        self._holding = False

    async def _ready(self) -> Session:
        """The session in its transaction, begun in this process's turn, waiting (async) for
        another process's lock."""
        orm = self._session()
        if self._holding:
            return orm
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
                orm.connection()  # BEGIN IMMEDIATE (the engine's begin hook)
                return orm
            except OperationalError as exc:
                orm.rollback()
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

    async def finish(self, *, commit: bool) -> None:
        orm = self._orm
        try:
            if orm is None:
                return
            if commit:
                if orm.new or orm.dirty or orm.deleted:
                    await self._ready()  # objects only added so far: the commit's flush writes them
                orm.commit()
            else:
                orm.rollback()
        finally:
            self._release()

    async def close(self) -> None:
        try:
            if self._orm is not None:
                self._orm.close()
        finally:
            self._release()
