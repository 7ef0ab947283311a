"""Helpers for the jobs tests: a store with its own workers, and reads of what the jobs left behind."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update

from svc.adapters.mail.eml import EmlDirectorySender
from svc.context import Adapters, AppContext
from svc.db import Database
from svc.domains.audit.service import record
from svc.jobs.registry import JobRegistry, JobRun
from svc.jobs.worker import Worker
from svc.models import AuditEvent, Job
from svc.settings import Settings

ACTION = "test.job"


class TestKind(StrEnum):
    """Job kinds of the tests' own (svc's are each area's, domains/<area>/kinds.py)."""

    __test__ = False
    record = "test.record"
    slow = "test.slow"
    unknown = "test.unknown"
    tick = "cycle.tick"


@dataclass
class Store:
    """One migrated state store; every worker made here shares it, each under its own name."""

    settings: Settings
    db: Database
    workers: list[Worker] = field(default_factory=list)

    @property
    def ctx(self) -> AppContext:
        """A context on this store, for units of work of the test's own."""
        return self.context("test")

    def context(self, name: str) -> AppContext:
        return AppContext(settings=self.settings, db=self.db,
                          adapters=Adapters(mail=EmlDirectorySender(self.settings.mail_dir())), worker_name=name)

    def worker(self, registry: JobRegistry, name: str) -> Worker:
        w = Worker(self.context(name), registry)
        self.workers.append(w)
        return w


async def write_audit(run: JobRun, **data: Any) -> None:
    """The handlers' side effect: one AuditEvent row in the job's own transaction."""
    await record(run.session, ACTION, actor=None, org=None, target=str(run.payload["id"]),
                 data={"attempt": run.attempt, **data})


async def audit_rows(db: Database, target: str, action: str = ACTION) -> list[AuditEvent]:
    async with db.transaction(write=False) as s:
        rows = await s.scalars(select(AuditEvent).where(AuditEvent.action == action, AuditEvent.target == target))
        return list(rows.all())


async def job(db: Database, job_id: str) -> Job:
    async with db.transaction(write=False) as s:
        row = await s.get(Job, job_id)
        assert row is not None, job_id
        return row


async def jobs_of_kind(db: Database, kind: str) -> list[Job]:
    async with db.transaction(write=False) as s:
        return list((await s.scalars(select(Job).where(Job.kind == kind).order_by(Job.created_at))).all())


async def set_job(db: Database, job_id: str, **values: Any) -> None:
    """Move a job's row by hand (simulate time passing or a process that died)."""
    async with db.transaction() as s:
        await s.execute(update(Job).where(Job.id == job_id).values(**values))


async def run_until_idle(workers: Iterable[Worker], rounds: int = 20) -> None:
    """Let the workers claim and run until none finds due work (bounded)."""
    workers = list(workers)
    for _ in range(rounds):
        worked = [await w.run_once() for w in workers]
        if not any(worked):
            return
    raise AssertionError("the workers still had work after the bounded number of rounds")
