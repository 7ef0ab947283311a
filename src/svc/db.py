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
from sqlalchemy import Engine, Executable, Row, Select, create_engine, event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session

from svc.kit.loop_session import LoopReadSession, LoopWriteSession, PlainReader
from svc.kit.store_session import AsyncioStoreSession, StoreSession
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
        session = self.write() if write else self.read()
        try:
            yield session
            if write:
                await session.finish(commit=True)
        except BaseException:
            if write:
                await session.finish(commit=False)
            raise
        finally:
            await session.close()


# Objects stay readable after the commit (a use case's answer is built from them); a query
# flushes what the session holds first.
_SESSION_OPTIONS: dict[str, Any] = {"expire_on_commit": False, "autoflush": True}


def open_database(settings: Settings) -> Database:
    url = settings.sqlalchemy_url
    # The ORM session class of this Database's sessions (on either store), its own.
    session_class = type("SvcSession", (Session,), {})
    read: Callable[[], StoreSession]
    write: Callable[[], StoreSession]
    if url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, pool_size=8, max_overflow=8)  # for migrations
        _install_sqlite_hooks(engine)
        path = str((settings.data_dir / "svc.sqlite3").resolve())
        # Reads run each statement in its own implicit transaction, as PostgreSQL's READ COMMITTED
        # gives each statement its own snapshot; no BEGIN/COMMIT/reset round trips per request.
        # They run on the event loop's thread through a synchronous engine (kit/loop_session.py).
        # (No begin hook and no engine-wide execution options: each costs every read ~10-15 us.)
        read_engine = create_engine(f"sqlite:///{path}", pool_size=8, max_overflow=24, pool_reset_on_return=None,
                                    connect_args={"check_same_thread": False, "isolation_level": None})
        _install_sqlite_connect_hook(read_engine)
        # Writes on the loop's thread too (kit/loop_session.py LoopWriteSession): one connection
        # per turn (this process's writers take turns), BEGIN IMMEDIATE at the first statement.
        write_engine = create_engine(f"sqlite:///{path}", pool_size=2, max_overflow=2,
                                     connect_args={"check_same_thread": False, "isolation_level": None})
        _install_sqlite_connect_hook(write_engine, busy_timeout_ms=0)
        event.listen(write_engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
        reader = PlainReader(read_engine)
        read = partial(LoopReadSession, reader, partial(session_class, read_engine, **_SESSION_OPTIONS))
        write = partial(LoopWriteSession, write_engine, asyncio.Lock(),
                        partial(session_class, write_engine, **_SESSION_OPTIONS))
        return Database(engine=engine, sqlite_reader=reader, read=read, write=write, is_sqlite=True,
                        session_class=session_class)
    engine = create_async_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
    maker = async_sessionmaker(engine, sync_session_class=session_class, **_SESSION_OPTIONS)
    read = write = lambda: AsyncioStoreSession(maker())
    return Database(engine=engine, sqlite_reader=None, read=read, write=write, is_sqlite=False,
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
    """The rows of a Core read (table columns, no ORM entities): on an SQLite read session straight
    from a connection kept for such reads, skipping the ORM session's handling of a statement;
    elsewhere `session.execute(...).all()`. For the named hot paths of docs/architecture.md ("The
    store") only, each with its figure beside it; a use case reads through the session."""
    if isinstance(session, LoopReadSession):
        return session.plain_reader.rows(statement, params)
    return (await session.execute(statement, params)).all()


def is_postgres(session: StoreSession) -> bool:
    """Row locks, SKIP LOCKED and advisory locks exist only there; SQLite serialises writers instead."""
    return session.dialect.name == "postgresql"


# Row locks. On SQLite a write transaction holds the whole store's write lock from its first
# statement (BEGIN IMMEDIATE), so writers are serial and there is nothing to lock; SQLAlchemy's
# SQLite dialect renders no FOR UPDATE. A query that reads what it locks therefore says
# `.with_for_update()` on both stores; a lock taken for its own sake goes through lock_rows.

async def lock_rows(session: StoreSession, statement: Select[*tuple[Any, ...]]) -> None:
    """Hold the rows `statement` selects until the transaction ends, so that rule checks spanning
    them (the last admin, a cap) run one at a time: SELECT ... FOR UPDATE on PostgreSQL; on
    SQLite, no statement at all (writers are serial already)."""
    if is_postgres(session):
        await session.execute(statement.with_for_update())


def dialect_insert(session: StoreSession, table: Any) -> postgresql.Insert | sqlite.Insert:
    """INSERT in the store's own dialect, for its ON CONFLICT clause (spelt alike by both)."""
    return postgresql.insert(table) if is_postgres(session) else sqlite.insert(table)
