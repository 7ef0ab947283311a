"""The session of the state store that use cases and queries take (`StoreSession`), on either store.

SQLAlchemy's AsyncSession runs every statement in a greenlet and, on SQLite, hands every DBAPI call
to aiosqlite's thread: about 0.4 ms per statement, where SQLite itself answers in tens of
microseconds. So svc's session is a small type of its own, with the methods svc uses, and two
implementations on SQLAlchemy's public API only:

- SQLite (kit/loop_session.py): an ordinary `Session` on a pysqlite engine, its statements run
  directly on the event loop's thread; writers take turns and wait for another process's write
  lock asynchronously;
- PostgreSQL (`AsyncioStoreSession`, below): an `AsyncSession` on asyncpg.

Both are made by svc.db.open_database. The ORM session underneath is of the Database's own
`session_class`, so ORM session events (the credential cache's, auth/invalidation.py) see both.
tests/store/test_store_session_contract.py runs the same contract against both; a use case goes
through the session, and what skips it is listed in docs/architecture.md ("The store").
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, TypeVar, TypeVarTuple, overload

from sqlalchemy import CursorResult, Dialect, Executable, Result, ScalarResult
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.sql.selectable import TypedReturnsRows

_T = TypeVar("_T")
_O = TypeVar("_O", bound=object)
_Ts = TypeVarTuple("_Ts")

# A statement's bound parameters: one set, or several for an executemany.
Params = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None
Options = Mapping[str, Any] | None
AnyRow = tuple[Any, ...]


class UnitOfWorkCommits(RuntimeError):
    """A use case called commit() or rollback(): only its unit of work (svc/uow.py) may."""


class StoreConnection(abc.ABC):
    """The connection of a session's transaction (`await session.connection()`), for Core and
    driver-level statements; it is the session's own (its transaction, its turn to write). It
    skips the ORM session (its autoflush, its statement events): only on a named hot path
    (docs/architecture.md, "The store")."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    @overload
    async def execute(self, statement: TypedReturnsRows[*_Ts], params: Params = None, *,
                      execution_options: Options = None) -> CursorResult[*_Ts]: ...

    @overload
    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> CursorResult[*AnyRow]: ...

    @abc.abstractmethod
    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> CursorResult[*AnyRow]:
        """Run a Core statement in the session's transaction."""

    @abc.abstractmethod
    async def exec_driver_sql(self, statement: str, params: Any = None) -> CursorResult[*AnyRow]:
        """Run SQL text as the driver takes it (its own parameter style)."""


class StoreSession(abc.ABC):
    """Every session of the state store. A use case reads, adds and flushes; the unit of work that
    opened the session decides whether it commits (svc/uow.py), so commit() and rollback()
    refuse here. Savepoints (begin_nested) stay a use case's own.

    The methods are AsyncSession's, with the same meaning; `dialect` is the store's."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    # --- statements ---

    @overload
    async def execute(self, statement: TypedReturnsRows[*_Ts], params: Params = None, *,
                      execution_options: Options = None) -> Result[*_Ts]: ...

    @overload
    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> Result[*AnyRow]: ...

    @abc.abstractmethod
    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> Result[*AnyRow]:
        """Run a statement (ORM or Core); DML answers a CursorResult (its `rowcount`)."""

    @overload
    async def scalar(self, statement: TypedReturnsRows[_T], params: Mapping[str, Any] | None = None, *,
                     execution_options: Options = None) -> _T | None: ...

    @overload
    async def scalar(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                     execution_options: Options = None) -> Any: ...

    @abc.abstractmethod
    async def scalar(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                     execution_options: Options = None) -> Any:
        """The first column of the first row, or None."""

    @overload
    async def scalars(self, statement: TypedReturnsRows[_T], params: Mapping[str, Any] | None = None, *,
                      execution_options: Options = None) -> ScalarResult[_T]: ...

    @overload
    async def scalars(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                      execution_options: Options = None) -> ScalarResult[Any]: ...

    @abc.abstractmethod
    async def scalars(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                      execution_options: Options = None) -> ScalarResult[Any]:
        """The first column of every row."""

    @abc.abstractmethod
    async def get(self, entity: type[_O], ident: Any, *, with_for_update: bool = False,
                  populate_existing: bool = False) -> _O | None:
        """The object with that primary key: from this session's objects when it holds it, else read.
        With `with_for_update` or `populate_existing` it is read in any case, and a held object's
        attributes with it: a row read locked (on PostgreSQL) is what the lock holds, not what an
        earlier read of the same session saw. (SQLAlchemy's own get would lock the row and keep the
        held object's older attributes.)"""

    # --- objects ---

    @abc.abstractmethod
    def add(self, instance: object) -> None:
        """Make `instance` part of the session: inserted by the next flush."""

    def add_all(self, instances: Iterable[object]) -> None:
        for instance in instances:
            self.add(instance)

    @abc.abstractmethod
    def expunge(self, instance: object) -> None:
        """Detach `instance` from the session."""

    @abc.abstractmethod
    async def flush(self) -> None:
        """Write all the session's pending changes (in its transaction; the unit of work commits).
        A query flushes first too (autoflush)."""

    @abc.abstractmethod
    async def delete(self, instance: object) -> None:
        """Mark `instance` for deletion at the next flush."""

    @abc.abstractmethod
    async def refresh(self, instance: object, attribute_names: Iterable[str] | None = None,
                      with_for_update: bool = False) -> None:
        """Read `instance`'s attributes again from the store."""

    @abc.abstractmethod
    async def merge(self, instance: _O, *, load: bool = True) -> _O:
        """The session's copy of `instance`'s state (loaded with `load`)."""

    @abc.abstractmethod
    def begin_nested(self) -> contextlib.AbstractAsyncContextManager[None]:
        """`async with session.begin_nested():` a savepoint: released when the block ends, rolled
        back (with what the block changed) when it raises."""

    @abc.abstractmethod
    async def connection(self) -> StoreConnection:
        """The connection of this session's transaction (begun if need be)."""

    # --- ending: the unit of work's ---

    async def commit(self) -> None:
        raise UnitOfWorkCommits("A use case does not commit: its unit of work does, once it returns")

    async def rollback(self) -> None:
        raise UnitOfWorkCommits("A use case does not roll back: raise an error, and its unit of work rolls back")

    @abc.abstractmethod
    async def finish(self, *, commit: bool) -> None:
        """End the transaction: for the unit of work (and the store's own test helpers) only."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Give the connection back; objects read stay readable, detached. A cancellation does not
        cut it short."""


class _AsyncioConnection(StoreConnection):
    def __init__(self, conn: AsyncConnection) -> None:
        super().__init__(conn.dialect)
        self._conn = conn

    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> CursorResult[*AnyRow]:
        return await self._conn.execute(statement, params, execution_options=execution_options)

    async def exec_driver_sql(self, statement: str, params: Any = None) -> CursorResult[*AnyRow]:
        return await self._conn.exec_driver_sql(statement, params)


class AsyncioStoreSession(StoreSession):
    """A StoreSession over SQLAlchemy's AsyncSession (PostgreSQL, asyncpg): each statement awaits
    the driver; rows come read at once."""

    def __init__(self, session: AsyncSession) -> None:
        bind = session.bind
        assert bind is not None, "the store's sessions are bound to its engine"
        super().__init__(bind.dialect)
        self._session = session

    async def execute(self, statement: Executable, params: Params = None, *,
                      execution_options: Options = None) -> Result[*AnyRow]:
        return await self._session.execute(statement, params, execution_options=execution_options or {})

    async def scalar(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                     execution_options: Options = None) -> Any:
        return await self._session.scalar(statement, params, execution_options=execution_options or {})

    async def scalars(self, statement: Executable, params: Mapping[str, Any] | None = None, *,
                      execution_options: Options = None) -> ScalarResult[Any]:
        return await self._session.scalars(statement, params, execution_options=execution_options or {})

    async def get(self, entity: type[_O], ident: Any, *, with_for_update: bool = False,
                  populate_existing: bool = False) -> _O | None:
        return await self._session.get(entity, ident, with_for_update=with_for_update or None,
                                       populate_existing=populate_existing or with_for_update or None)

    def add(self, instance: object) -> None:
        self._session.add(instance)

    def expunge(self, instance: object) -> None:
        self._session.expunge(instance)

    async def flush(self) -> None:
        await self._session.flush()

    async def delete(self, instance: object) -> None:
        await self._session.delete(instance)

    async def refresh(self, instance: object, attribute_names: Iterable[str] | None = None,
                      with_for_update: bool = False) -> None:
        await self._session.refresh(instance, attribute_names, with_for_update=with_for_update or None)

    async def merge(self, instance: _O, *, load: bool = True) -> _O:
        return await self._session.merge(instance, load=load)

    @contextlib.asynccontextmanager
    async def begin_nested(self) -> AsyncIterator[None]:
        async with self._session.begin_nested():
            yield

    async def connection(self) -> StoreConnection:
        return _AsyncioConnection(await self._session.connection())

    async def finish(self, *, commit: bool) -> None:
        if commit:
            await self._session.commit()
        else:
            await self._session.rollback()

    async def close(self) -> None:
        # Shielded, as AsyncSession's own `async with` closes: a cancelled request still gives
        # its connection back whole.
        await asyncio.shield(asyncio.ensure_future(self._session.close()))
