"""The state store: engine, sessions, migrations.

SQLite (embedded default) serialises writers. A transaction that reads and then writes could
otherwise fail with SQLITE_BUSY when another writer committed in between, so write sessions
start with BEGIN IMMEDIATE: the process's writers take turns on an asyncio.Lock, and the lock of
another process is waited for with asyncio.sleep, never in SQLite (kit/loop_session.py
LoopWriteSession). Read sessions run in autocommit (each statement sees the latest commit, as under
PostgreSQL's READ COMMITTED). Both run their statements directly on the event loop's thread: SQLite
answers in microseconds, less than a hand-over to another thread costs. Migrations keep the asyncio
engine (aiosqlite). PostgreSQL uses row locks (SELECT ... FOR UPDATE) where rules must hold
under concurrency.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, Executable, Row, create_engine, event, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session

from svc.kit.loop_session import LoopReadSession, LoopWriteSession, PlainReader
from svc.kit.store_session import StoreSession
from svc.settings import Settings

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_MIGRATION_LOCK_KEY = 0x5356430001  # pg_advisory_xact_lock key: one migrator at a time


def _install_sqlite_connect_hook(engine: Engine, *, busy_timeout_ms: int = 30000) -> None:
    """The PRAGMAs every connection needs, writers' and readers' alike. (The loop's writer does
    not wait in SQLite for the write lock: it waits in asyncio, kit/loop_session.py.)"""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take over transaction control from the driver so BEGIN can be IMMEDIATE.
        if dbapi_connection.isolation_level is not None:
            dbapi_connection.isolation_level = None
        cur = dbapi_connection.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()


def _install_sqlite_hooks(engine: AsyncEngine) -> None:
    _install_sqlite_connect_hook(engine.sync_engine)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "")
        if mode != "AUTOCOMMIT":
            conn.exec_driver_sql(f"BEGIN {mode}".strip())


@dataclass
class Database:
    engine: AsyncEngine
    # SQLite: a synchronous engine for reads on the event loop's thread (kit/loop_session.py).
    sqlite_reader: PlainReader | None
    read: Callable[[], StoreSession]
    write: Callable[[], StoreSession]
    is_sqlite: bool
    # The ORM session class of this Database's sessions, its own: whoever watches this store's
    # writes (the credential cache, auth/invalidation.py) listens to events of this class only.
    session_class: type[Session]

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self.sqlite_reader is not None:
            self.sqlite_reader.close()
            self.sqlite_reader.engine.dispose()

    @asynccontextmanager
    async def transaction(self, *, write: bool = True) -> AsyncIterator[StoreSession]:
        """A session that commits on success and rolls back on error, for the tests and tools that
        look at the store directly. Use cases never open one: they run in a unit of work
        (svc/uow.py), which decides when to commit. A read transaction is only closed."""
        maker = self.write if write else self.read
        if not write and self.is_sqlite:
            # AsyncSession's `async with` closes in a task of its own (so a cancellation cannot
            # abandon the close partway): a trip through the event loop with the connection still
            # checked out, during which other requests check out more, past the pool's size.
            # Closing a LoopReadSession has no await point to abandon.
            session = maker()
            try:
                yield session
            finally:
                await session.close()
            return
        session = maker()
        async with session:
            if not write:
                yield session
                return
            try:
                yield session
                await session.finish(commit=True)
            except BaseException:
                await session.finish(commit=False)
                raise


def open_database(settings: Settings) -> Database:
    url = settings.sqlalchemy_url
    if url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, pool_size=8, max_overflow=8)
        _install_sqlite_hooks(engine)
        write_bind = engine.execution_options(sqlite_begin="IMMEDIATE")
        path = str((settings.data_dir / "svc.sqlite3").resolve())
        # Reads run each statement in its own implicit transaction, as PostgreSQL's READ COMMITTED
        # gives each statement its own snapshot; no BEGIN/COMMIT/reset round trips per request.
        # They run on the event loop's thread through a synchronous engine (kit/loop_session.py).
        # (No begin hook and no engine-wide execution options: each costs every read ~10-15 us.)
        sync_read_engine = create_engine(f"sqlite:///{path}", pool_size=8, max_overflow=24,
                                         pool_reset_on_return=None,
                                         connect_args={"check_same_thread": False, "isolation_level": None})
        _install_sqlite_connect_hook(sync_read_engine)
        # Writes on the loop's thread too (kit/loop_session.py LoopWriteSession): one connection
        # per turn (this process's writers take turns), BEGIN IMMEDIATE at the first statement.
        sync_write_engine = create_engine(f"sqlite:///{path}", pool_size=2, max_overflow=2,
                                          connect_args={"check_same_thread": False, "isolation_level": None})
        _install_sqlite_connect_hook(sync_write_engine, busy_timeout_ms=0)
        event.listen(sync_write_engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
        is_sqlite = True
    else:
        engine = create_async_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
        write_bind = engine
        sync_read_engine = None
        sync_write_engine = None
        is_sqlite = False
    session_class = type("SvcSession", (Session,), {})
    read: Callable[[], StoreSession]
    reader = None
    if sync_read_engine is not None:
        reader = PlainReader(sync_read_engine)
        read = partial(LoopReadSession, reader, sync_session_class=session_class, expire_on_commit=False,
                       autoflush=True)
    else:
        read = async_sessionmaker(engine, class_=StoreSession, expire_on_commit=False, autoflush=True,
                                  sync_session_class=session_class)
    write: Callable[[], StoreSession]
    if sync_write_engine is not None:
        write = partial(LoopWriteSession, sync_write_engine, asyncio.Lock(), sync_session_class=session_class,
                        expire_on_commit=False, autoflush=True)
    else:
        write = async_sessionmaker(write_bind, class_=StoreSession, expire_on_commit=False, autoflush=True,
                                   sync_session_class=session_class)
    return Database(engine=engine, sqlite_reader=reader, read=read, write=write, is_sqlite=is_sqlite,
                    session_class=session_class)


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


async def migrate(db: Database, revision: str = "head") -> None:
    """Bring the schema to `revision`; several processes starting at once migrate once."""

    def _upgrade(conn: Connection) -> None:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK_KEY})
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)

    async with db.engine.execution_options(sqlite_begin="IMMEDIATE").begin() as conn:
        await conn.run_sync(_upgrade)


async def plain_rows(session: StoreSession, statement: Executable,
                     params: Mapping[str, Any] | None = None) -> Sequence[Row[Any]]:
    """The rows of a Core statement (table columns, no ORM entities), for the hottest reads: on
    an SQLite read session they come straight from a connection, skipping the ORM session's
    transaction bookkeeping (about a third of such a read's cost)."""
    if isinstance(session, LoopReadSession):
        return session.plain_reader.rows(statement, params)
    return (await session.execute(statement, params)).all()


def is_postgres(session: StoreSession) -> bool:
    """Row locks and SKIP LOCKED exist only there; SQLite serialises writers instead."""
    return session.get_bind().dialect.name == "postgresql"
