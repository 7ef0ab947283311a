"""SQLite writes run on the event loop's thread (svc.kit.loop_session.LoopWriteSession): this
process's writers take turns, and another process holding the write lock is waited for without
blocking the loop, so reads keep being answered meanwhile."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from svc.settings import Settings
from tests.support.api import Svc, running_svc


@pytest.fixture
async def sqlite_svc(tmp_path: Path) -> AsyncIterator[Svc]:
    settings = Settings(data_dir=tmp_path / "data", database_url=None, enable_dev_auth=True,
                        public_url="http://svc.test", job_poll_seconds=0.05)
    async with running_svc(settings, run_workers=False) as svc:
        yield svc


async def test_concurrent_writes_take_turns(sqlite_svc: Svc) -> None:
    owner = await sqlite_svc.login("owner")
    assert (await owner.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme"})).status_code == 201

    async def rename(i: int) -> int:
        return (await owner.client.patch("/v1/orgs/acme", json={"name": f"Acme {i}"})).status_code

    statuses = await asyncio.gather(*(rename(i) for i in range(40)),
                                    *(sqlite_svc.login(f"user{i}") for i in range(10)))
    assert [s for s in statuses if isinstance(s, int)] == [200] * 40
    names = {o["name"] for o in (await owner.client.get("/v1/orgs")).json()["orgs"] if o["slug"] == "acme"}
    assert names <= {f"Acme {i}" for i in range(40)} and len(names) == 1


async def test_another_process_writing_delays_a_write_but_not_reads(sqlite_svc: Svc) -> None:
    owner = await sqlite_svc.login("owner")
    assert (await owner.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme"})).status_code == 201
    path = sqlite_svc.ctx.settings.data_dir / "svc.sqlite3"
    holding, release = threading.Event(), threading.Event()

    def other_writer() -> None:  # a script or `svc admin`: holds the write lock for a while
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE orgs SET name = 'Held' WHERE slug = 'acme'")
        holding.set()
        release.wait(10)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=other_writer)
    thread.start()
    try:
        assert await asyncio.to_thread(holding.wait, 10)
        write = asyncio.create_task(owner.client.patch("/v1/orgs/acme", json={"name": "Mine"}))
        for _ in range(5):  # the loop keeps answering reads while the write waits for its turn
            r = await owner.client.get("/v1/me")
            assert r.status_code == 200
        assert not write.done()
    finally:
        release.set()
        await asyncio.to_thread(thread.join, 10)
    r = await write
    assert r.status_code == 200, r.text
    orgs = (await owner.client.get("/v1/orgs")).json()["orgs"]
    assert [o["name"] for o in orgs if o["slug"] == "acme"] == ["Mine"]
