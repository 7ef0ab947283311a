"""SQL of the jobs table: claim, complete, retry. Jobs are written by `UnitOfWork.enqueue` (svc/uow.py)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Table, bindparam, insert, or_, select, update

from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import Cycle, Job, JobStatus

_JOBS = cast(Table, Job.__table__)


def _due(now: Any) -> ColumnElement[bool]:
    """Jobs due at `now` (a value or a bind parameter), or whose holder's lease ran out (ix_jobs_due)."""
    return or_((_JOBS.c.status == JobStatus.queued.value) & (_JOBS.c.run_at <= now),
               (_JOBS.c.status == JobStatus.running.value) & (_JOBS.c.locked_until < now))


# Whether claim would find anything: a read, so an idle worker's poll never takes SQLite's write
# lock from the requests writing beside it.
_ANY_DUE = select(_JOBS.c.id).where(_due(bindparam("now"))).limit(1)


async def any_due(session: StoreSession) -> bool:
    # Through the session: plain_rows would save about 70 us of CPU a poll on SQLite (bench/store.py,
    # jobs.any_due: 36-40 against 104-116 us), at two polls a second not a hot path
    # (docs/architecture.md, "The store").
    return (await session.execute(_ANY_DUE, {"now": utcnow()})).first() is not None


async def claim(session: StoreSession, *, worker: str, lease: timedelta, limit: int) -> list[Job]:
    """Take up to `limit` due jobs, or jobs whose holder's lease ran out (it died mid-job)."""
    now = utcnow()
    stmt = select(Job).where(_due(now)).order_by(Job.run_at).limit(limit)
    stmt = stmt.with_for_update(skip_locked=True)  # rendered on PostgreSQL only: SQLite's writers are serial
    jobs: list[Job] = []
    for job in (await session.scalars(stmt)).all():
        if job.status == JobStatus.running and job.attempts >= job.max_attempts:
            # Its holder died during the last allowed attempt: a job that kills its process
            # must not be taken over forever.
            job.status = JobStatus.failed
            job.finished_at = now
            job.locked_by = None
            job.locked_until = None
            job.last_error = f"lease ran out during attempt {job.attempts} of {job.max_attempts}"
            continue
        jobs.append(job)
        job.status = JobStatus.running
        job.locked_by = worker
        job.locked_until = now + lease
        job.attempts += 1
    await session.flush()
    return jobs


async def complete(session: StoreSession, job_id: str, worker: str) -> bool:
    """Mark done only if this worker still holds the lease; False means the job was taken over."""
    result = await session.execute(
        update(Job).where(Job.id == job_id, Job.locked_by == worker, Job.status == JobStatus.running)
        .values(status=JobStatus.done, finished_at=utcnow(), locked_by=None, locked_until=None, last_error=None)
        .execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    return result.rowcount == 1


def backoff(attempt: int) -> timedelta:
    """After the n-th failed attempt, exponential with jitter: ~2 s, 4 s, 8 s ... at most an hour.
    The one retry schedule of every job kind (a mail server's greylisting included)."""
    base = min(3600.0, 2.0 ** attempt)
    return timedelta(seconds=base * random.uniform(0.75, 1.25))


async def fail(session: StoreSession, job_id: str, worker: str, error: str) -> None:
    job = await session.get(Job, job_id, with_for_update=True)
    if job is None or job.locked_by != worker or job.status != JobStatus.running:
        return
    job.last_error = error[:2000]
    job.locked_by = None
    job.locked_until = None
    if job.attempts >= job.max_attempts:
        job.status = JobStatus.failed
        job.finished_at = utcnow()
    else:
        job.status = JobStatus.queued
        job.run_at = utcnow() + backoff(job.attempts)


async def extend_lease(session: StoreSession, job_ids: list[str], worker: str, lease: timedelta) -> None:
    await session.execute(
        update(Job).where(Job.id.in_(job_ids), Job.locked_by == worker, Job.status == JobStatus.running)
        .values(locked_until=utcnow() + lease).execution_options(synchronize_session=False))


async def due_cycles(session: StoreSession, names: list[str]) -> tuple[list[str], set[str]]:
    """(names due now, names that have no schedule row yet)."""
    now = utcnow()
    rows = (await session.execute(select(Cycle.name, Cycle.next_run_at).where(Cycle.name.in_(names)))).all()
    known = {name: at for name, at in rows}
    return [n for n, at in known.items() if at <= now], set(names) - set(known)


async def create_cycles(session: StoreSession, names: set[str]) -> None:
    now = utcnow()
    for name in names:
        exists = await session.get(Cycle, name)
        if exists is None:
            await session.execute(insert(Cycle).values(name=name, next_run_at=now, last_run_at=None))


async def follow_intervals(session: StoreSession, intervals: dict[str, timedelta]) -> list[tuple[str, datetime]]:
    """A cycle whose stored next run is further away than its interval now allows (its setting was
    made shorter) is brought forward: to its last run plus the interval (due at once if that has
    passed), or now plus the interval if it never ran. The cycles moved, and when they now run."""
    now = utcnow()
    rows = (await session.scalars(select(Cycle).where(Cycle.name.in_(list(intervals))))).all()
    moved = []
    for row in rows:
        latest = now + intervals[row.name]
        if row.next_run_at > latest:
            row.next_run_at = min(latest, row.last_run_at + intervals[row.name]) if row.last_run_at else latest
            moved.append((row.name, row.next_run_at))
    return moved


async def take_cycle_slot(session: StoreSession, name: str, interval: timedelta) -> bool:
    """One conditional UPDATE: of several processes, exactly one moves the schedule on."""
    now = utcnow()
    result = await session.execute(
        update(Cycle).where(Cycle.name == name, Cycle.next_run_at <= now)
        .values(next_run_at=now + interval, last_run_at=now).execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    return result.rowcount == 1
