"""SQLite read requests run on the event loop's thread (svc.kit.loop_session): they see every
commit at once, hold no read snapshot between requests (so the WAL can always be checkpointed),
serve ORM reads as well as plain rows, and leave no file open once the store is closed."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

from svc.db import migrate, open_database, plain_rows
from svc.kit.loop_session import LoopReadSession
from svc.models import Org
from svc.settings import Settings
from tests.support.api import Svc, running_svc


@pytest.fixture
async def sqlite_svc(tmp_path: Path) -> AsyncIterator[Svc]:
    settings = Settings(data_dir=tmp_path / "data", database_url=None, enable_dev_auth=True,
                        public_url="http://svc.test", job_poll_seconds=0.05)
    async with running_svc(settings, run_workers=False) as svc:
        yield svc


def _store_path(svc: Svc) -> Path:
    return svc.ctx.settings.data_dir / "svc.sqlite3"


async def test_a_get_sees_each_write_at_once(sqlite_svc: Svc) -> None:
    owner = await sqlite_svc.login("owner")
    assert (await owner.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme"})).status_code == 201
    for i in range(5):
        await sqlite_svc.login(f"m{i}")
        r = await owner.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": f"m{i}",
                                                                   "role": "member"})
        assert r.status_code == 201, r.text
        members = (await owner.client.get("/v1/orgs/acme/members")).json()["members"]
        assert [m["user"]["subject"] for m in members] == ["owner"] + [f"m{j}" for j in range(i + 1)]
    # A change made by another connection to the file (a second writer, as a script would be).
    with sqlite3.connect(_store_path(sqlite_svc)) as conn:
        conn.execute("UPDATE users SET name = 'Renamed' WHERE subject = 'm3'")
    members = (await owner.client.get("/v1/orgs/acme/members")).json()["members"]
    assert {m["user"]["subject"]: m["user"]["name"] for m in members}["m3"] == "Renamed"


async def test_reads_hold_no_snapshot_between_requests(sqlite_svc: Svc) -> None:
    """A read left open would pin the WAL: a TRUNCATE checkpoint would then report busy and the
    WAL file would keep growing with every write."""
    owner = await sqlite_svc.login("owner")
    assert (await owner.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme"})).status_code == 201
    for i in range(3):  # lists of several rows: a read stopped partway would stay open
        await sqlite_svc.login(f"m{i}")
        r = await owner.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": f"m{i}",
                                                                   "role": "member"})
        assert r.status_code == 201, r.text
    for _ in range(20):
        assert (await owner.client.get("/v1/orgs/acme/members")).status_code == 200
        assert (await owner.client.get("/v1/orgs")).status_code == 200
    with sqlite3.connect(_store_path(sqlite_svc)) as conn:
        busy, _log, _checkpointed = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0
    assert os.path.getsize(str(_store_path(sqlite_svc)) + "-wal") == 0


async def test_read_sessions_serve_orm_and_plain_reads_from_any_thread(sqlite_svc: Svc) -> None:
    owner = await sqlite_svc.login("owner")
    assert (await owner.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme"})).status_code == 201
    db = sqlite_svc.ctx.db
    async with db.transaction(write=False) as session:
        assert isinstance(session, LoopReadSession)
        org = (await session.scalars(select(Org).where(Org.slug == "acme"))).one()
        assert org.name == "Acme"
        assert await session.get(Org, org.id) is org
        rows = await plain_rows(session, select(Org.__table__.c.slug).where(Org.__table__.c.id == org.id))
        assert [tuple(r) for r in rows] == [("acme",)]

    # Another thread (a worker thread, a second event loop) gets a connection of its own.
    assert db.sqlite_reader is not None
    reader = db.sqlite_reader
    results: list[str] = []

    def read_in_thread() -> None:
        results.extend(r[0] for r in reader.rows(select(Org.__table__.c.slug).order_by(Org.__table__.c.slug)))

    threads = [threading.Thread(target=read_in_thread) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(["acme", owner.personal_org] * 4)


def _open_files(path: Path) -> int:
    fd_dir = Path("/proc/self/fd")
    count = 0
    for fd in fd_dir.iterdir():
        try:
            if os.readlink(fd).startswith(str(path)):
                count += 1
        except OSError:
            pass
    return count


async def test_closing_the_store_closes_its_read_connections(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", database_url=None)
    db = open_database(settings)
    await migrate(db)
    async with db.transaction(write=False) as session:
        await plain_rows(session, select(Org.__table__.c.id))
        await session.scalars(select(Org))
    store = settings.data_dir / "svc.sqlite3"
    assert _open_files(store) > 0
    await db.dispose()
    assert _open_files(store) == 0
