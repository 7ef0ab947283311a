"""The StoreSession contract (svc.kit.store_session), the same tests against both implementations:

- `loop`: kit/loop_session.py's LoopReadSession and LoopWriteSession, what open_database gives on
  SQLite (statements on the event loop's thread, on SQLite's synchronous driver, so SQLite only);
- `asyncio`: AsyncioStoreSession over SQLAlchemy's AsyncSession, what open_database gives on
  PostgreSQL (asyncpg), and here on SQLite too (aiosqlite, the store's migration engine, with the
  store's own begin modes: reads in autocommit, writes BEGIN IMMEDIATE), so that a difference
  between the implementations shows on one store.

Every public method's promise: reads, writes, flush, what a commit and a rollback do, savepoints,
the connection of a session's transaction, closing, and the errors a use case sees.
tests/store/test_sessions.py has what is a store's own (row locks, the ORM events' watchers)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest
from sqlalchemy import CursorResult, Table, bindparam, func, inspect, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import async_sessionmaker

from svc.db import _SESSION_OPTIONS, Database, dialect_insert, open_database, plain_rows
from svc.kit.clock import utcnow
from svc.kit.loop_session import LoopReadSession, LoopWriteSession
from svc.kit.store_session import AsyncioStoreSession, StoreSession, UnitOfWorkCommits
from svc.models import Org, RateCounter
from svc.settings import Settings

ORGS: Table = Org.__table__  # type: ignore[assignment]
# (implementation, store): the loop sessions need SQLite's synchronous driver.
CASES = [("loop", "sqlite"), ("asyncio", "sqlite"), ("asyncio", "postgres")]


@pytest.fixture(params=CASES, ids=[f"{impl}-{store}" for impl, store in CASES])
def case(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def store(case: tuple[str, str]) -> str:
    """The store of the case (this overrides the suite's `store`: `settings` and its migrated store follow it)."""
    return case[1]


@dataclass
class Sessions:
    read: Callable[[], StoreSession]
    write: Callable[[], StoreSession]
    dialect: str

    async def commit(self, *objects: object) -> None:
        s = self.write()
        try:
            s.add_all(objects)
            await s.finish(commit=True)
        finally:
            await s.close()

    async def names(self) -> dict[str, str]:
        """The orgs as a fresh read session sees them (what is committed)."""
        s = self.read()
        try:
            return {o.slug: o.name for o in (await s.scalars(select(Org))).all()}
        finally:
            await s.close()


@pytest.fixture
async def sessions(case: tuple[str, str], settings: Settings) -> AsyncIterator[Sessions]:
    impl, store = case
    db: Database = open_database(settings)
    try:
        if impl == "loop" or store == "postgres":
            # The store's own sessions, as open_database makes them.
            read_type, write_type = ((LoopReadSession, LoopWriteSession) if impl == "loop"
                                     else (AsyncioStoreSession, AsyncioStoreSession))
            assert isinstance(db.read(), read_type) and isinstance(db.write(), write_type)
            yield Sessions(read=db.read, write=db.write, dialect=db.engine.dialect.name)
        else:
            # AsyncioStoreSession on SQLite: the same ORM session class and options, reads in
            # autocommit and writes BEGIN IMMEDIATE (the begin hook of svc.db), as the loop's.
            def maker(begin: str) -> Callable[[], StoreSession]:
                made = async_sessionmaker(db.engine.execution_options(sqlite_begin=begin),
                                          sync_session_class=db.session_class, **_SESSION_OPTIONS)
                return lambda: AsyncioStoreSession(made())

            yield Sessions(read=maker("AUTOCOMMIT"), write=maker("IMMEDIATE"), dialect="sqlite")
    finally:
        await db.dispose()


def _org(slug: str, name: str = "") -> Org:
    return Org(id=f"org_{slug}", slug=slug, name=name or slug.title(), created_at=utcnow())


# --- reads ---

async def test_the_dialect_is_the_stores(sessions: Sessions) -> None:
    for s in (sessions.read(), sessions.write()):
        try:
            assert s.dialect.name == sessions.dialect
            assert (await s.connection()).dialect.name == sessions.dialect
        finally:
            await s.close()


async def test_reads(sessions: Sessions) -> None:
    await sessions.commit(_org("acme"), _org("beta"))
    s = sessions.read()
    try:
        # scalars: the first column of every row; scalar: of the first row, or None.
        assert [o.slug for o in (await s.scalars(select(Org).order_by(Org.slug))).all()] == ["acme", "beta"]
        assert await s.scalar(select(func.count()).select_from(Org)) == 2
        assert await s.scalar(select(Org.name).where(Org.slug == "nope")) is None
        assert await s.scalar(select(Org.name).where(Org.slug == bindparam("slug")), {"slug": "beta"}) == "Beta"
        later = await s.scalars(select(Org.slug).where(Org.slug > bindparam("after")), {"after": "acme"})
        assert later.all() == ["beta"]
        # execute: ORM and Core statements, bound parameters, SQL text.
        rows = (await s.execute(select(Org.slug, Org.name).order_by(Org.slug))).all()
        assert [tuple(r) for r in rows] == [("acme", "Acme"), ("beta", "Beta")]
        core = await s.execute(select(ORGS.c.name).where(ORGS.c.slug == bindparam("slug")), {"slug": "acme"})
        assert core.scalar_one() == "Acme"
        sql = await s.execute(text("SELECT name FROM orgs WHERE slug = :slug"), {"slug": "beta"})
        assert sql.scalar_one() == "Beta"
        # get: the session's own object when it holds it, None when no row has that key.
        acme = await s.get(Org, "org_acme")
        assert acme is not None and acme.name == "Acme"
        assert await s.get(Org, "org_acme") is acme
        assert (await s.scalars(select(Org).where(Org.slug == "acme"))).one() is acme
        assert await s.get(Org, "org_nope") is None
    finally:
        await s.close()
    assert acme.name == "Acme"  # objects read stay readable once the session is closed


async def test_get_reads_again_when_asked(sessions: Sessions) -> None:
    await sessions.commit(_org("acme"))
    s = sessions.read()
    try:
        acme = await s.get(Org, "org_acme")
        assert acme is not None
        other = sessions.write()
        try:
            await other.execute(update(ORGS).where(ORGS.c.slug == "acme").values(name="Renamed"))
            await other.finish(commit=True)
        finally:
            await other.close()
        assert (await s.get(Org, "org_acme")) is acme and acme.name == "Acme"  # held: not read again
        assert (await s.get(Org, "org_acme", populate_existing=True)) is acme and acme.name == "Renamed"
        other = sessions.write()
        try:
            await other.execute(update(ORGS).where(ORGS.c.slug == "acme").values(name="Locked"))
            await other.finish(commit=True)
        finally:
            await other.close()
        # with_for_update reads it again too: what the lock holds (PostgreSQL), not the earlier read.
        assert (await s.get(Org, "org_acme", with_for_update=True)) is acme and acme.name == "Locked"
    finally:
        await s.close()


async def test_a_read_session_sees_each_commit(sessions: Sessions) -> None:
    """Each statement of a read session sees the latest commit (SQLite in autocommit, PostgreSQL's
    READ COMMITTED); what a write session has not committed, nobody else sees."""
    s = sessions.read()
    w = sessions.write()
    try:
        assert await s.scalar(select(func.count()).select_from(Org)) == 0
        w.add(_org("acme"))
        await w.flush()
        assert await s.scalar(select(func.count()).select_from(Org)) == 0
        await w.finish(commit=True)
        assert await s.scalar(select(func.count()).select_from(Org)) == 1
    finally:
        await w.close()
        await s.close()


async def test_execution_options_reach_the_statement(sessions: Sessions) -> None:
    await sessions.commit(_org("acme"))
    s = sessions.write()
    try:
        acme = await s.get(Org, "org_acme")
        assert acme is not None
        conn = await s.connection()
        query = select(Org).where(Org.slug == "acme")
        again = {"populate_existing": True}
        # Each reading method passes them on: populate_existing reads the held object's attributes again.
        for name, read in (("Scalars", lambda: s.scalars(query, execution_options=again)),
                           ("Scalar", lambda: s.scalar(query, execution_options=again)),
                           ("Execute", lambda: s.execute(query, execution_options=again))):
            await conn.execute(update(ORGS).where(ORGS.c.slug == "acme").values(name=name))
            assert (await s.scalars(query)).one() is acme and acme.name != name
            await read()
            assert acme.name == name
        await s.finish(commit=False)
    finally:
        await s.close()


# --- writes ---

async def test_writes_and_their_flush(sessions: Sessions) -> None:
    s = sessions.write()
    try:
        s.add(_org("acme"))
        s.add_all([_org("beta"), _org("gone")])
        conn = await s.connection()  # the session's transaction; it does not flush
        count = select(func.count()).select_from(ORGS)
        assert (await conn.execute(count)).scalar_one() == 0
        s.add(_org("gamma"))
        await s.flush()
        assert (await conn.execute(count)).scalar_one() == 4
        # A query flushes what the session holds first.
        s.add(_org("delta"))
        assert await s.scalar(count) == 5
        # DML answers its row count, executemany too.
        changed = await s.execute(update(ORGS).where(ORGS.c.slug.in_(["acme", "beta"])).values(name="Changed"))
        assert isinstance(changed, CursorResult) and changed.rowcount == 2
        many = await s.execute(update(ORGS).where(ORGS.c.slug == bindparam("s")).values(name=bindparam("n")),
                               [{"s": "gamma", "n": "G"}, {"s": "delta", "n": "D"}])
        assert isinstance(many, CursorResult)
        # An upsert in the store's own dialect (svc.db.dialect_insert), with RETURNING.
        for want in (1, 2):
            upsert = dialect_insert(s, RateCounter).values(key="k", window_start=0, count=1)
            upsert = upsert.on_conflict_do_update(index_elements=[RateCounter.key, RateCounter.window_start],
                                                  set_={"count": RateCounter.count + 1})
            assert (await s.execute(upsert.returning(RateCounter.count))).scalar_one() == want
        # refresh reads the object again (only the named attributes when named).
        acme = await s.get(Org, "org_acme")
        assert acme is not None and acme.name == "Changed"
        await conn.execute(update(ORGS).where(ORGS.c.slug == "acme").values(name="Behind"))
        acme.plan = "pro"
        await s.refresh(acme, ["name"])  # a query: the pending change is flushed first
        assert acme.name == "Behind" and acme.plan == "pro"
        await conn.execute(update(ORGS).where(ORGS.c.slug == "acme").values(plan="team"))
        await s.refresh(acme)
        assert acme.plan == "team"
        # merge: the session's own copy gets the detached object's state.
        copy = Org(id="org_beta", slug="beta", name="Beta Two", created_at=utcnow())
        merged = await s.merge(copy)
        assert merged is not copy and merged is await s.get(Org, "org_beta") and merged.name == "Beta Two"
        # delete: gone at the next flush.
        gone = await s.get(Org, "org_gone")
        await s.delete(gone)
        await s.flush()
        assert await s.get(Org, "org_gone") is None
        # expunge: detached; the key is read again as a new object.
        s.expunge(acme)
        assert inspect(acme).detached
        again = await s.get(Org, "org_acme")
        assert again is not None and again is not acme
        await s.finish(commit=True)
    finally:
        await s.close()
    assert await sessions.names() == {"acme": "Behind", "beta": "Beta Two", "gamma": "G", "delta": "D"}


async def test_a_commit_writes_what_was_only_added(sessions: Sessions) -> None:
    s = sessions.write()
    try:
        s.add(_org("acme"))  # no statement has run: the commit's flush begins the transaction
        await s.finish(commit=True)
    finally:
        await s.close()
    assert await sessions.names() == {"acme": "Acme"}


async def test_objects_stay_readable_after_the_commit(sessions: Sessions) -> None:
    s = sessions.write()
    try:
        acme = _org("acme")
        s.add(acme)
        await s.flush()
        await s.finish(commit=True)
        assert acme.name == "Acme" and not inspect(acme).expired
    finally:
        await s.close()
    assert acme.slug == "acme"


async def test_a_rollback_undoes_the_whole_transaction(sessions: Sessions) -> None:
    await sessions.commit(_org("acme"))
    s = sessions.write()
    try:
        flushed, pending = _org("beta"), _org("gamma")
        s.add(flushed)
        await s.flush()
        s.add(pending)
        acme = await s.get(Org, "org_acme")
        assert acme is not None
        acme.name = "Dirty"
        await s.execute(update(ORGS).where(ORGS.c.slug == "beta").values(name="Session DML"))
        await (await s.connection()).execute(ORGS.insert().values(id="org_conn", slug="conn", name="Conn",
                                                                  personal=False, plan="free", created_at=utcnow()))
        async with s.begin_nested():
            s.add(_org("nested"))
        await s.finish(commit=False)
        # Objects added in the transaction are the session's no more; those read are expired.
        assert inspect(flushed).transient and inspect(pending).transient
        assert inspect(acme).expired
    finally:
        await s.close()
    assert await sessions.names() == {"acme": "Acme"}


async def test_closing_without_finishing_drops_the_changes(sessions: Sessions) -> None:
    s = sessions.write()
    try:
        s.add(_org("acme"))
        await s.flush()
    finally:
        await s.close()
    assert await sessions.names() == {}
    # The next writer has its turn (the closed one's lock and connection are given back).
    await sessions.commit(_org("beta"))
    assert await sessions.names() == {"beta": "Beta"}


async def test_a_session_never_used_finishes_and_closes(sessions: Sessions) -> None:
    for make in (sessions.read, sessions.write):
        for commit in (True, False):
            s = make()
            await s.finish(commit=commit)
            await s.close()
        await make().close()
    await sessions.commit(_org("acme"))
    assert await sessions.names() == {"acme": "Acme"}


async def test_a_savepoint_takes_back_its_block_only(sessions: Sessions) -> None:
    s = sessions.write()
    try:
        s.add(_org("acme"))
        await s.flush()
        with pytest.raises(IntegrityError):  # the store refuses: slug taken
            async with s.begin_nested():
                s.add(Org(id="org_twin", slug="acme", name="Twin", created_at=utcnow()))
        with pytest.raises(ValueError, match="rule"):  # the use case refuses, after a flush and DML
            async with s.begin_nested():
                s.add(_org("beta"))
                await s.flush()
                await s.execute(update(ORGS).where(ORGS.c.slug == "acme").values(name="Inside"))
                raise ValueError("a rule says no")
        async with s.begin_nested():  # a block that succeeds keeps its change
            s.add(_org("gamma"))
        assert [o.slug for o in (await s.scalars(select(Org).order_by(Org.slug))).all()] == ["acme", "gamma"]
        await s.finish(commit=True)
    finally:
        await s.close()
    assert await sessions.names() == {"acme": "Acme", "gamma": "Gamma"}


# --- the connection of the session's transaction, and svc.db.plain_rows ---

async def test_the_connection_is_the_sessions_transaction(sessions: Sessions) -> None:
    s = sessions.write()
    try:
        s.add(_org("acme"))
        await s.flush()
        conn = await s.connection()
        assert (await conn.execute(select(ORGS.c.name).where(ORGS.c.slug == bindparam("s")), {"s": "acme"})
                ).scalar_one() == "Acme"
        changed = await conn.execute(update(ORGS).where(ORGS.c.slug == "acme").values(name="Via"))
        assert changed.rowcount == 1
        assert (await conn.exec_driver_sql("SELECT 41 + 1")).scalar_one() == 42
        # executemany (its rowcount is the driver's: asyncpg does not count)
        await conn.execute(update(ORGS).where(ORGS.c.slug == bindparam("s")).values(plan=bindparam("p")),
                           [{"s": "acme", "p": "pro"}, {"s": "none", "p": "pro"}])
        assert await s.scalar(select(ORGS.c.plan)) == "pro"  # the session sees what its connection wrote
        await s.finish(commit=True)
    finally:
        await s.close()
    r = sessions.read()
    try:
        assert [tuple(row) for row in await plain_rows(r, select(ORGS.c.slug, ORGS.c.name, ORGS.c.plan))] == [
            ("acme", "Via", "pro")]
        assert (await (await r.connection()).execute(select(ORGS.c.slug))).scalars().all() == ["acme"]
    finally:
        await r.close()


# --- errors ---

async def test_the_errors_a_use_case_sees(sessions: Sessions) -> None:
    await sessions.commit(_org("acme"))
    s = sessions.write()
    try:
        with pytest.raises(UnitOfWorkCommits):
            await s.commit()
        with pytest.raises(UnitOfWorkCommits):
            await s.rollback()
        s.add(_org("beta"))  # still there: refusing to commit undid nothing
        # A constraint refused by the store: IntegrityError, from the flush, on both stores.
        s.add(Org(id="org_twin", slug="acme", name="Twin", created_at=utcnow()))
        with pytest.raises(IntegrityError):
            await s.flush()
        await s.finish(commit=False)  # the transaction is over: the unit of work rolls back
    finally:
        await s.close()
    assert await sessions.names() == {"acme": "Acme"}
    s = sessions.write()
    try:
        # Any other error of the store's is a DBAPIError, whatever the driver's own class.
        with pytest.raises(DBAPIError):
            await s.execute(text("SELECT nothing FROM no_such_table"))
        await s.finish(commit=False)
    finally:
        await s.close()
    r = sessions.read()
    try:
        with pytest.raises(DBAPIError):
            await r.scalar(text("SELECT nothing FROM no_such_table"))
    finally:
        await r.close()
    await sessions.commit(_org("beta"))  # the store is usable after each
    assert await sessions.names() == {"acme": "Acme", "beta": "Beta"}
