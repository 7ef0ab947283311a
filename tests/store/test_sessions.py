"""svc's StoreSession (svc.kit.store_session) on both stores: every method the areas use, the
connection of a session's transaction, savepoints that take back a refused change, row locks, and
a use case's session refusing to commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import CursorResult, func, select, text, update
from sqlalchemy.exc import IntegrityError

from svc.auth.invalidation import watch_writes
from svc.db import Database, dialect_insert, lock_rows, migrate, open_database, plain_rows
from svc.kit.clock import utcnow
from svc.kit.store_session import UnitOfWorkCommits
from svc.models import Org, RateCounter
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


async def test_the_methods_the_areas_use(db: Database) -> None:
    async with db.transaction() as s:
        s.add(_org("acme"))
        s.add_all([_org("beta"), _org("gone")])
        await s.flush()
        acme = await s.get(Org, "org_acme")
        assert acme is not None and acme.name == "Acme"
        assert await s.get(Org, "org_nope") is None
        assert await s.get(Org, "org_acme", with_for_update=True) is acme
        assert [o.slug for o in (await s.scalars(select(Org).order_by(Org.slug))).all()] == ["acme", "beta", "gone"]
        assert await s.scalar(select(func.count()).select_from(Org)) == 3
        rows = (await s.execute(select(Org.slug, Org.name).where(Org.slug == "beta"))).all()
        assert [tuple(r) for r in rows] == [("beta", "Beta")]
        # DML answers its row count; refresh reads what it changed into the object.
        changed = await s.execute(update(Org).where(Org.slug == "acme").values(name="Acme Inc")
                                  .execution_options(synchronize_session=False))
        assert isinstance(changed, CursorResult) and changed.rowcount == 1
        assert acme.name == "Acme"
        await s.refresh(acme)
        assert acme.name == "Acme Inc"
        # merge: the session's own object gets the detached copy's state.
        copy = Org(id="org_beta", slug="beta", name="Beta Two", created_at=utcnow())
        merged = await s.merge(copy)
        assert merged is not copy and merged.name == "Beta Two"
        gone = await s.get(Org, "org_gone")
        await s.delete(gone)
        await s.flush()
        # An upsert in the store's own dialect, with RETURNING.
        for want in (1, 2):
            stmt = dialect_insert(s, RateCounter).values(key="k", window_start=0, count=1)
            stmt = stmt.on_conflict_do_update(index_elements=[RateCounter.key, RateCounter.window_start],
                                              set_={"count": RateCounter.count + 1})
            assert (await s.execute(stmt.returning(RateCounter.count))).scalar_one() == want
    assert await _names(db) == {"acme": "Acme Inc", "beta": "Beta Two"}

    async with db.transaction(write=False) as s:
        org = (await s.scalars(select(Org).where(Org.slug == "acme"))).one()
        assert await s.get(Org, org.id) is org
        s.expunge(org)
        assert await s.get(Org, org.id) is not org
        rows = await plain_rows(s, select(Org.__table__.c.slug).order_by(Org.__table__.c.slug))
        assert [r[0] for r in rows] == ["acme", "beta"]
    assert org.name == "Acme Inc"  # read objects stay readable once the session is closed


async def test_a_failed_write_leaves_nothing(db: Database) -> None:
    with pytest.raises(RuntimeError, match="refused"):
        async with db.transaction() as s:
            s.add(_org("acme"))
            await s.flush()
            raise RuntimeError("refused")
    assert await _names(db) == {}


async def test_the_connection_of_a_sessions_transaction(db: Database) -> None:
    async with db.transaction() as s:
        s.add(_org("acme"))
        conn = await s.connection()
        assert conn.dialect.name == db.engine.dialect.name
        # It is the session's transaction: it sees the flushed row, and what it writes is committed
        # (or rolled back) with the session's own changes.
        await s.flush()
        result = await conn.execute(select(Org.__table__.c.name).where(Org.__table__.c.slug == "acme"))
        assert result.scalar_one() == "Acme"
        changed = await conn.execute(update(Org.__table__).where(Org.__table__.c.slug == "acme").values(name="Via"))
        assert changed.rowcount == 1
        assert (await conn.exec_driver_sql("SELECT 41 + 1")).scalar_one() == 42
    assert await _names(db) == {"acme": "Via"}

    with pytest.raises(RuntimeError):
        async with db.transaction() as s:
            conn = await s.connection()
            await conn.execute(update(Org.__table__).values(name="Lost"))
            raise RuntimeError("roll back")
    assert await _names(db) == {"acme": "Via"}

    async with db.transaction(write=False) as s:
        conn = await s.connection()
        assert (await conn.execute(select(Org.__table__.c.slug))).scalars().all() == ["acme"]
        assert (await conn.exec_driver_sql("SELECT 'read'")).scalar_one() == "read"


async def test_a_savepoint_takes_back_a_refused_change_only(db: Database) -> None:
    async with db.transaction() as s:
        s.add(_org("acme"))
        await s.flush()
        with pytest.raises(IntegrityError):  # the store refuses: slug taken
            async with s.begin_nested():
                s.add(Org(id="org_other", slug="acme", name="Twin", created_at=utcnow()))
        with pytest.raises(ValueError, match="rule"):  # the use case refuses, after a flush
            async with s.begin_nested():
                s.add(_org("beta"))
                await s.flush()
                raise ValueError("a rule says no")
        async with s.begin_nested():  # a savepoint whose block succeeds keeps its change
            s.add(_org("gamma"))
        assert [o.slug for o in (await s.scalars(select(Org).order_by(Org.slug))).all()] == ["acme", "gamma"]
    assert await _names(db) == {"acme": "Acme", "gamma": "Gamma"}


async def test_a_use_cases_session_does_not_commit(db: Database) -> None:
    async with db.transaction() as s:
        s.add(_org("acme"))
        with pytest.raises(UnitOfWorkCommits):
            await s.commit()
        with pytest.raises(UnitOfWorkCommits):
            await s.rollback()
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
