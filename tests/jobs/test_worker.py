"""The outbox and its worker on both state stores: jobs exist exactly when their transaction commits,
a handler's writes commit with the job, failures back off and end `failed`, cycles run once per
slot across workers, and a job whose holder lost its lease is finished by someone else, once."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select

from svc.jobs.registry import JobRegistry, JobRun
from svc.jobs.worker import Worker
from svc.kit.clock import utcnow
from svc.models import Cycle, Job
from svc.uow import unit_of_work
from tests.jobs.helpers import Store, TestKind, audit_rows, job, jobs_of_kind, run_until_idle, set_job, write_audit
from tests.support.wait import until

KIND = TestKind.record


def recording_registry() -> JobRegistry:
    registry = JobRegistry()

    async def handle(run: JobRun) -> None:
        await write_audit(run)

    registry.handler(KIND, handle)
    return registry


async def test_a_job_enqueued_in_a_rolled_back_transaction_never_runs(store_db: Store) -> None:
    db = store_db.db
    with pytest.raises(RuntimeError):
        async with unit_of_work(store_db.ctx) as uow:
            uow.enqueue(KIND, {"id": "rolled-back"})
            await uow.session.flush()
            raise RuntimeError("the state change failed")
    async with unit_of_work(store_db.ctx) as uow:
        kept = uow.enqueue(KIND, {"id": "committed"})

    await run_until_idle([store_db.worker(recording_registry(), "w1")])

    assert [j.payload["id"] for j in await jobs_of_kind(db, KIND)] == ["committed"]
    assert (await job(db, kept.id)).status == "done"
    assert len(await audit_rows(db, "committed")) == 1
    assert await audit_rows(db, "rolled-back") == []


async def test_handler_writes_commit_exactly_when_the_job_completes(store_db: Store) -> None:
    db = store_db.db
    written = asyncio.Event()
    release = asyncio.Event()
    registry = JobRegistry()

    async def handle(run: JobRun) -> None:
        await write_audit(run)
        if run.payload.get("fail"):
            raise ValueError("failed after writing")
        await run.session.flush()
        written.set()
        await release.wait()

    registry.handler(KIND, handle)
    worker = store_db.worker(registry, "w1")
    async with unit_of_work(store_db.ctx) as uow:
        ok = uow.enqueue(KIND, {"id": "ok"})

    running = asyncio.create_task(worker.run_once())
    try:
        await asyncio.wait_for(written.wait(), 10)
        # The row is written inside the job's transaction but nobody else can see it yet.
        assert await audit_rows(db, "ok") == []
        assert (await job(db, ok.id)).status == "running"
        release.set()
        assert await asyncio.wait_for(running, 10) is True
    finally:
        release.set()
        await asyncio.gather(running, return_exceptions=True)
    done = await job(db, ok.id)
    assert done.status == "done" and done.finished_at is not None and done.locked_by is None
    assert len(await audit_rows(db, "ok")) == 1

    # A handler that writes and then fails leaves nothing behind; the job goes back to the queue.
    async with unit_of_work(store_db.ctx) as uow:
        bad = uow.enqueue(KIND, {"id": "bad", "fail": True})
    assert await worker.run_once() is True
    again = await job(db, bad.id)
    assert again.status == "queued" and again.attempts == 1
    assert again.last_error == "ValueError: failed after writing"
    assert await audit_rows(db, "bad") == []


async def test_a_failing_handler_backs_off_and_ends_failed_after_max_attempts(store_db: Store) -> None:
    db = store_db.db
    registry = JobRegistry()
    calls: list[int] = []

    async def handle(run: JobRun) -> None:
        calls.append(run.attempt)
        raise ValueError(f"boom on attempt {run.attempt}")

    registry.handler(KIND, handle)
    worker = store_db.worker(registry, "w1")
    async with unit_of_work(store_db.ctx) as uow:
        j = uow.enqueue(KIND, {"id": "x"}, max_attempts=3)

    # ~2 s then ~4 s, with jitter of a quarter either way: the wait grows. The failure is stamped
    # somewhere between `before` and `after`, however long the attempt takes on a busy machine.
    for attempt, (shortest, longest) in ((1, (1.5, 2.5)), (2, (3.0, 5.0))):
        before = utcnow()
        assert await worker.run_once() is True
        after = utcnow()
        row = await job(db, j.id)
        assert row.status == "queued" and row.attempts == attempt
        assert row.last_error == f"ValueError: boom on attempt {attempt}"
        assert row.locked_by is None
        assert before + timedelta(seconds=shortest) <= row.run_at <= after + timedelta(seconds=longest)
        # Not due yet: nothing to claim until the backoff has passed.
        assert await worker.run_once() is False
        await set_job(db, j.id, run_at=utcnow() - timedelta(seconds=1))

    assert await worker.run_once() is True
    row = await job(db, j.id)
    assert row.status == "failed" and row.attempts == 3 and row.finished_at is not None
    assert row.last_error == "ValueError: boom on attempt 3"
    assert await worker.run_once() is False
    assert calls == [1, 2, 3]


async def test_a_job_without_a_handler_fails_like_a_failing_handler(store_db: Store) -> None:
    db = store_db.db
    async with unit_of_work(store_db.ctx) as uow:
        j = uow.enqueue(TestKind.unknown, {"id": "u"}, max_attempts=1)
    assert await store_db.worker(JobRegistry(), "w1").run_once() is True
    row = await job(db, j.id)
    assert row.status == "failed"
    assert row.last_error == "LookupError: no handler for job kind 'test.unknown'"


def count_rounds(worker: Worker, rounds: dict[str, int], name: str) -> None:
    """Count the rounds of the worker's loop: each looks for due cycles once."""
    schedule = worker.schedule_cycles

    async def counted() -> None:
        await schedule()
        rounds[name] += 1

    worker.schedule_cycles = counted  # type: ignore[method-assign]


async def test_a_cycle_registered_on_two_workers_is_enqueued_once_per_slot(store_db: Store) -> None:
    db = store_db.db
    ran: list[str] = []

    def registry_of(worker: str) -> JobRegistry:
        registry = JobRegistry()

        async def tick(run: JobRun) -> None:
            ran.append(worker)

        registry.cycle(TestKind.tick, 3600, tick)
        return registry

    a = store_db.worker(registry_of("a"), "a")
    b = store_db.worker(registry_of("b"), "b")
    rounds = {"a": 0, "b": 0}
    for name, w in (("a", a), ("b", b)):
        count_rounds(w, rounds, name)
    stop = asyncio.Event()
    loops = [asyncio.create_task(a.run(stop)), asyncio.create_task(b.run(stop))]
    try:
        async def wait_for_done(count: int) -> list[Job]:
            async def finished() -> list[Job] | None:
                jobs = await jobs_of_kind(db, TestKind.tick)
                return jobs if len([j for j in jobs if j.status == "done"]) >= count else None

            return list(await until(finished, what=f"{count} cycle run(s) finished"))

        async def more_rounds(n: int) -> None:
            """Each worker has looked for due cycles n more times."""
            target = {name: done + n for name, done in rounds.items()}
            await until(lambda: all(rounds[name] >= target[name] for name in rounds),
                        what=f"the workers going round {n} more times")

        await wait_for_done(1)
        await more_rounds(10)  # the slot is taken: however often they look, nothing more
        assert len(await jobs_of_kind(db, TestKind.tick)) == 1

        # The next slot comes due (as if an hour had passed): again exactly one run.
        async with db.transaction() as s:
            cycle = (await s.scalars(select(Cycle).where(Cycle.name == TestKind.tick))).one()
            cycle.next_run_at = utcnow() - timedelta(seconds=1)
        await wait_for_done(2)
        await more_rounds(10)
        jobs = await jobs_of_kind(db, TestKind.tick)
    finally:
        stop.set()
        await asyncio.gather(*loops)
    assert len(jobs) == 2 and all(j.status == "done" and j.max_attempts == 1 for j in jobs)
    assert len(ran) == 2


async def test_a_job_whose_lease_ran_out_is_taken_over(store_db: Store) -> None:
    db = store_db.db
    async with unit_of_work(store_db.ctx) as uow:
        expired = uow.enqueue(KIND, {"id": "expired"})
        held = uow.enqueue(KIND, {"id": "held"})
        poison = uow.enqueue(KIND, {"id": "poison"}, max_attempts=2)
    past, future = utcnow() - timedelta(seconds=5), utcnow() + timedelta(minutes=5)
    # Each was claimed by a process that then died (or, for `held`, is still alive).
    await set_job(db, expired.id, status="running", locked_by="dead:1", locked_until=past, attempts=1)
    await set_job(db, held.id, status="running", locked_by="alive:1", locked_until=future, attempts=1)
    await set_job(db, poison.id, status="running", locked_by="dead:2", locked_until=past, attempts=2)

    await run_until_idle([store_db.worker(recording_registry(), "w2")])

    row = await job(db, expired.id)
    assert row.status == "done" and row.attempts == 2
    assert [a.data["attempt"] for a in await audit_rows(db, "expired")] == [2]
    # A live lease is respected.
    row = await job(db, held.id)
    assert row.status == "running" and row.locked_by == "alive:1"
    assert await audit_rows(db, "held") == []
    # A job whose holder died during its last allowed attempt is not taken over again, forever.
    row = await job(db, poison.id)
    assert row.status == "failed" and row.attempts == 2 and row.locked_by is None
    assert row.last_error == "lease ran out during attempt 2 of 2"
    assert await audit_rows(db, "poison") == []


async def test_a_worker_that_lost_its_lease_does_not_commit_its_writes(store_db: Store) -> None:
    db = store_db.db
    started = asyncio.Event()
    release = asyncio.Event()
    registry = JobRegistry()

    async def handle(run: JobRun) -> None:
        if run.attempt == 1:
            # Slow outside work first (as handlers should), then the writes.
            started.set()
            await release.wait()
        await write_audit(run, worker=run.ctx.worker_name)

    registry.handler(KIND, handle)
    slow = store_db.worker(registry, "slow")
    other = store_db.worker(registry, "other")
    async with unit_of_work(store_db.ctx) as uow:
        j = uow.enqueue(KIND, {"id": "contested"})

    first = asyncio.create_task(slow.run_once())
    try:
        await asyncio.wait_for(started.wait(), 10)
        assert (await job(db, j.id)).locked_by == "slow"
        # The slow worker's lease runs out (it stalled); the other worker takes the job over.
        await set_job(db, j.id, locked_until=utcnow() - timedelta(seconds=1))
        assert await other.run_once() is True
        release.set()
        assert await asyncio.wait_for(first, 10) is True
    finally:
        release.set()
        await asyncio.gather(first, return_exceptions=True)

    rows = await audit_rows(db, "contested")
    assert [(r.data["worker"], r.data["attempt"]) for r in rows] == [("other", 2)]
    row = await job(db, j.id)
    # The loser neither committed its writes nor marked the job failed.
    assert row.status == "done" and row.attempts == 2 and row.last_error is None
