"""The store as open_database makes it, on both stores: Database.transaction, row locks, and the
ORM events the credential cache's watcher listens to. The StoreSession contract itself (every method, on both
implementations): tests/store/test_store_session_contract.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select, text, update

from svc.auth.invalidation import watch_writes
from svc.db import Database, lock_rows, migrate, open_database
from svc.kit.clock import utcnow
from svc.models import Org
from svc.settings import Settings
from tests.support.wait import until


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    database = open_database(settings)
    await migrate(database)
    try:
        yield database
    finally:
        await database.dispose()


def _org(slug: str, name: str = "") -> Org:
    return Org(id=f"org_{slug}", slug=slug, name=name or slug.title(), created_at=utcnow())


async def _names(db: Database) -> dict[str, str]:
    async with db.transaction(write=False) as s:
        return {o.slug: o.name for o in (await s.scalars(select(Org))).all()}


async def test_a_transaction_commits_on_success_and_leaves_nothing_on_error(db: Database) -> None:
    """Database.transaction, the tests' and tools' own way to the store (use cases have their unit of work)."""
    async with db.transaction() as s:
        s.add(_org("acme"))
    with pytest.raises(RuntimeError, match="refused"):
        async with db.transaction() as s:
            s.add(_org("beta"))
            await s.flush()
            raise RuntimeError("refused")
    assert await _names(db) == {"acme": "Acme"}


async def _waits_for_a_lock(db: Database) -> bool:
    async with db.transaction(write=False) as s:
        waiting = await s.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))
    return bool(waiting)


async def test_row_locks(db: Database, store: str) -> None:
    """PostgreSQL: lock_rows and with_for_update() hold the rows until the commit; SQLite: writers
    are serial (BEGIN IMMEDIATE) and both run, rendering no FOR UPDATE."""
    async with db.transaction() as s:
        s.add(_org("acme"))
    order: list[str] = []

    async def second() -> None:
        async with db.transaction() as s2:
            await lock_rows(s2, select(Org.id).where(Org.slug == "acme"))
            order.append("second locked")
            org = (await s2.scalars(select(Org).where(Org.slug == "acme").with_for_update())).one()
            assert org.name == "First"  # it waited for the first one's commit: it sees its change

    async with db.transaction() as s1:
        await lock_rows(s1, select(Org.id).where(Org.slug == "acme"))
        await s1.execute(update(Org).where(Org.slug == "acme").values(name="First"))
        if store == "postgres":
            task = asyncio.create_task(second())
            await until(lambda: _waits_for_a_lock(db), what="the second transaction waiting for the row lock")
            assert order == []
        order.append("first commits")
    if store == "postgres":
        await asyncio.wait_for(task, 10)
    else:
        await second()
    assert order == ["first commits", "second locked"]


async def test_writes_are_seen_by_whoever_watches_the_session_class(db: Database) -> None:
    """The credential cache (auth/invalidation.py) listens to ORM events of the Database's own
    session class: a transaction that wrote watched rows tells it once it ends, on both stores."""
    ended: list[str] = []
    watch_writes(db.session_class, on_change=lambda: ended.append("changed"), notify=None)
    async with db.transaction() as s:
        s.add(_org("acme"))
    assert ended == ["changed"]
    async with db.transaction(write=False) as s:
        await s.scalars(select(Org))
    async with db.transaction() as s:
        await s.scalars(select(Org))
    assert ended == ["changed"]  # reads tell nothing
    async with db.transaction() as s:
        await s.execute(update(Org).values(name="Renamed"))
    assert ended == ["changed", "changed"]
