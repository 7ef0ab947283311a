"""Two worker processes sharing one PostgreSQL store (as several `svc serve` do): every job runs once,
both share the work, and a process killed mid-job (kill -9) has its job finished by the other."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from svc.adapters.mail.eml import EmlDirectorySender
from svc.context import Adapters, AppContext
from svc.db import Database, open_database
from svc.kit.clock import utcnow
from svc.models import AuditEvent, Job
from svc.settings import Settings
from svc.uow import unit_of_work
from tests.jobs.helpers import TestKind
from tests.jobs.worker_process import STARTED
from tests.support import stores
from tests.support.wait import WAIT_SECONDS

ROOT = Path(__file__).resolve().parents[2]
LONG_LEASE = 120.0


@dataclass
class Pg:
    url: str
    db: Database
    settings: Settings

    @property
    def ctx(self) -> AppContext:
        return AppContext(settings=self.settings, db=self.db,
                          adapters=Adapters(mail=EmlDirectorySender(self.settings.mail_dir())))


@pytest.fixture
async def pg(tmp_path: Path) -> AsyncIterator[Pg]:
    """A fresh PostgreSQL database of this test's own; the worker processes find it by its URL."""
    url = await stores.new_pg_database()
    settings = Settings(database_url=url, data_dir=tmp_path / "data")
    db = open_database(settings)
    try:
        yield Pg(url=url, db=db, settings=settings)
    finally:
        await db.dispose()
        await stores.drop_pg_database(url)


class Processes:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, pg: Pg, marker: str, *, lease: float) -> None:
        log = (self.tmp / f"{marker}.log").open("wb")
        self.procs[marker] = subprocess.Popen(
            [sys.executable, "-m", "tests.jobs.worker_process", pg.url, "--marker", marker,
             "--ready", str(self.tmp / f"{marker}.ready"), "--lease", str(lease), "--poll", "0.02"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        log.close()

    async def wait_ready(self) -> None:
        for _ in range(600):
            for marker, p in self.procs.items():
                if p.poll() is not None:
                    raise AssertionError(f"worker {marker} exited {p.returncode}:\n{self.logs()}")
            if all((self.tmp / f"{m}.ready").exists() for m in self.procs):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"the workers did not start:\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {m}\n{(self.tmp / f'{m}.log').read_text(errors='replace')[-3000:]}"
                         for m in self.procs)

    def stop_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@contextmanager
def processes(tmp: Path) -> Iterator[Processes]:
    procs = Processes(tmp)
    try:
        yield procs
    finally:
        procs.stop_all()


async def _count_jobs(db: Database, status: str) -> int:
    async with db.transaction(write=False) as s:
        return int(await s.scalar(select(func.count()).select_from(Job).where(Job.status == status)) or 0)


async def _audit(db: Database, action: str) -> list[AuditEvent]:
    async with db.transaction(write=False) as s:
        return list((await s.scalars(select(AuditEvent).where(AuditEvent.action == action))).all())


async def _wait_until(check: Callable[[], Awaitable[bool]], what: str, procs: Processes,
                      seconds: float = WAIT_SECONDS) -> None:
    for _ in range(int(seconds / 0.1)):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}:\n{procs.logs()}")


async def test_two_processes_run_each_job_exactly_once_and_share_the_work(pg: Pg, tmp_path: Path) -> None:
    with processes(tmp_path) as procs:
        procs.start(pg, "p1", lease=60)
        procs.start(pg, "p2", lease=60)
        await procs.wait_ready()
        ids = [f"job-{i:03d}" for i in range(200)]
        async with unit_of_work(pg.ctx) as uow:
            for i in ids:
                uow.enqueue(TestKind.record, {"id": i, "sleep": 0.01})

        async def all_done() -> bool:
            return await _count_jobs(pg.db, "done") == len(ids)

        await _wait_until(all_done, "200 jobs to finish", procs, seconds=120)
        assert all(p.poll() is None for p in procs.procs.values()), procs.logs()

    rows = await _audit(pg.db, "test.job")
    per_id = Counter(r.target for r in rows)
    assert per_id == Counter(ids), [i for i, n in per_id.items() if n != 1]
    by_process = Counter(r.data["marker"] for r in rows)
    assert set(by_process) == {"p1", "p2"}, by_process
    async with pg.db.transaction(write=False) as s:
        attempts = set((await s.scalars(select(Job.attempts))).all())
    assert attempts == {1}, "a job was claimed more than once"


async def test_a_job_of_a_process_killed_mid_job_is_finished_by_the_other(pg: Pg, tmp_path: Path) -> None:
    with processes(tmp_path) as procs:
        # A lease far longer than a busy machine could starve the holder's heartbeat (every third
        # of it): while the victim lives, nobody takes its job over.
        procs.start(pg, "p1", lease=LONG_LEASE)
        procs.start(pg, "p2", lease=LONG_LEASE)
        await procs.wait_ready()
        async with unit_of_work(pg.ctx) as uow:
            j = uow.enqueue(TestKind.slow, {"id": "slow-1", "sleep": 300})

        async def started() -> bool:
            return bool(await _audit(pg.db, STARTED))

        await _wait_until(started, "the job to start", procs)
        victim = (await _audit(pg.db, STARTED))[0].data["marker"]
        survivor = ({"p1", "p2"} - {victim}).pop()
        os.kill(procs.procs[victim].pid, signal.SIGKILL)
        assert procs.procs[victim].wait(timeout=10) == -signal.SIGKILL
        # Its lease runs out (as if LONG_LEASE had passed; a dead process renews nothing).
        async with pg.db.transaction() as s:
            await s.execute(update(Job).where(Job.id == j.id).values(locked_until=utcnow()))

        async def done() -> bool:
            return await _count_jobs(pg.db, "done") == 1

        await _wait_until(done, "the other process to take the job over", procs)

    rows = await _audit(pg.db, "test.job")
    assert [(r.target, r.data["marker"], r.data["attempt"]) for r in rows] == [("slow-1", survivor, 2)]
    assert len(await _audit(pg.db, STARTED)) == 1
    async with pg.db.transaction(write=False) as s:
        row = await s.get(Job, j.id)
        assert row is not None
    assert row.status == "done" and row.attempts == 2 and row.last_error is None
