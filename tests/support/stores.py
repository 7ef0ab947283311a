"""Real state stores for tests, each test's own and already migrated: an SQLite file copied from a
migrated template, or a PostgreSQL database cloned from a migrated template database on the
machine's server (SVC_TEST_PG, default postgresql://postgres@127.0.0.1:5432).

Each test process (an xdist worker) makes its own templates, under names of its own. Cloning a
PostgreSQL database takes about half a second and dropping one as long again, so the next database
is cloned while a test runs, and a test's database is dropped after it while the next one runs;
drop_template() waits for both at the end of the session."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import asyncpg

from svc.db import migrate, open_database
from svc.settings import Settings

PG_BASE = os.environ.get("SVC_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
_TEMPLATE = f"svc_tpl_{uuid.uuid4().hex[:8]}"
_SQLITE_FILE = "svc.sqlite3"


async def _admin() -> asyncpg.Connection:
    return await asyncpg.connect(f"{PG_BASE}/postgres")


async def _execute(sql: str) -> None:
    conn = await _admin()
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


class _PgDatabases:
    """The template, the database cloned ahead of the next test, and the drops under way. All on
    the event loop of the session (pytest-asyncio's session loop): a task of another loop is not
    waited for there, so a call from elsewhere clones its own database."""

    def __init__(self) -> None:
        self.template_ready = False
        self.lock: asyncio.Lock | None = None
        self.ahead: asyncio.Task[str] | None = None
        self.drops: set[asyncio.Task[None]] = set()

    async def ensure_template(self) -> None:
        if self.lock is None:
            self.lock = asyncio.Lock()
        async with self.lock:
            if self.template_ready:
                return
            await _execute(f'CREATE DATABASE "{_TEMPLATE}"')
            db = open_database(Settings(database_url=f"{PG_BASE}/{_TEMPLATE}"))
            try:
                await migrate(db)
            finally:
                await db.dispose()
            self.template_ready = True

    @staticmethod
    async def clone() -> str:
        name = f"svc_t_{uuid.uuid4().hex[:12]}"
        await _execute(f'CREATE DATABASE "{name}" TEMPLATE "{_TEMPLATE}"')
        return name

    async def take(self) -> str:
        await self.ensure_template()
        ahead, self.ahead = self.ahead, None
        loop = asyncio.get_running_loop()
        name = await ahead if ahead is not None and ahead.get_loop() is loop else await self.clone()
        self.ahead = loop.create_task(self.clone())
        return name

    def drop_later(self, name: str) -> None:
        task = asyncio.get_running_loop().create_task(drop_database(name))
        self.drops.add(task)
        task.add_done_callback(self.drops.discard)

    async def close(self) -> None:
        if self.ahead is not None:
            self.drops.add(asyncio.ensure_future(drop_database(await self.ahead)))
            self.ahead = None
        await asyncio.gather(*self.drops)
        if self.template_ready:
            await drop_database(_TEMPLATE)
            self.template_ready = False


_pg = _PgDatabases()


async def drop_database(name: str) -> None:
    await _execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def new_pg_database() -> str:
    """A migrated, empty database of its own; returns its postgresql:// URL."""
    return f"{PG_BASE}/{await _pg.take()}"


async def drop_pg_database(url: str) -> None:
    """Dropped in the background (the test is over; nothing connects to it any more)."""
    _pg.drop_later(url.rsplit("/", 1)[1])


async def drop_template() -> None:
    """At the end of the session: the database cloned ahead, the drops under way, the template."""
    await _pg.close()


_sqlite_template: Path | None = None


async def new_sqlite_store(data_dir: Path) -> None:
    """`data_dir` (made private, as svc makes it) holding a migrated SQLite store of its own."""
    global _sqlite_template
    if _sqlite_template is None:
        made = Path(tempfile.mkdtemp(prefix="svc-sqlite-template-"))
        db = open_database(Settings(data_dir=made))
        try:
            await migrate(db)
        finally:
            await db.dispose()  # the last connection closed: everything is in the one file
        _sqlite_template = made / _SQLITE_FILE
    data_dir.mkdir(mode=0o700, parents=True)
    shutil.copyfile(_sqlite_template, data_dir / _SQLITE_FILE)
    os.chmod(data_dir / _SQLITE_FILE, 0o600)


def drop_sqlite_template() -> None:
    if _sqlite_template is not None:
        shutil.rmtree(_sqlite_template.parent, ignore_errors=True)
