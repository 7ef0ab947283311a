"""The worker loop inside `svc serve`: schedule due cycles, claim jobs, run each in its unit of work.

Exactly-once for the state store: a handler's writes commit in the same transaction that marks
its job done, and only while this process still holds the lease. A process that dies mid-job
leaves the row `running` with a lease that runs out; another process then takes it over.
Handlers must be safe to run twice, because outside effects (mail, HTTP) may have happened
before the crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from datetime import timedelta

from sqlalchemy.exc import IntegrityError

from svc.context import AppContext
from svc.jobs import queries
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.ids import random_base62
from svc.uow import Tx, unit_of_work

log = logging.getLogger("svc.jobs")


class LeaseLost(Exception):
    """Another process took the job over (our lease ran out); our transaction must not commit."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{random_base62(6)}"


class Worker:
    def __init__(self, ctx: AppContext, registry: JobRegistry, *, batch: int = 8) -> None:
        self.ctx = ctx
        self.registry = registry
        self.batch = batch
        self.name = ctx.worker_name or worker_name()
        settings = ctx.settings
        self.lease = timedelta(seconds=settings.job_lease_seconds)
        self.poll = settings.job_poll_seconds

    async def run(self, stop: asyncio.Event) -> None:
        waiting = self.ctx.jobs_waiting
        try:
            await self.follow_intervals()
        except Exception:
            log.exception("could not bring the cycles' next runs forward")
        while not stop.is_set():
            # Cleared before looking for work, so a commit that enqueues while we look is kept.
            waiting.clear()
            worked = False
            try:
                await self.schedule_cycles()
                worked = await self.run_once()
            except Exception:
                log.exception("worker loop error")
            if not worked:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wait(stop), timeout=self.poll)

    async def _wait(self, stop: asyncio.Event) -> None:
        stop_task = asyncio.create_task(stop.wait())
        wake_task = asyncio.create_task(self.ctx.jobs_waiting.wait())
        try:
            await asyncio.wait({stop_task, wake_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_task.cancel()
            wake_task.cancel()

    async def follow_intervals(self) -> None:
        """At start: a cycle whose interval was made shorter (its setting) runs by the new one, not
        at the next run the old one stored."""
        intervals = {name: timedelta(seconds=spec.interval_seconds) for name, spec in self.registry.cycles.items()}
        if not intervals:
            return
        async with unit_of_work(self.ctx) as uow:
            moved = await queries.follow_intervals(uow.session, intervals)
        for name, at in moved:
            log.info("cycle %s: its interval is now %gs, so its next run was brought forward to %s", name,
                     intervals[name].total_seconds(), at.isoformat(timespec="seconds"))

    async def schedule_cycles(self) -> None:
        cycles = self.registry.cycles
        if not cycles:
            return
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            due, missing = await queries.due_cycles(uow.session, list(cycles))
        if missing:
            try:
                async with unit_of_work(self.ctx) as uow:
                    await queries.create_cycles(uow.session, missing)
            except IntegrityError:
                pass  # another process created them first
        for name in due:
            spec = cycles[name]
            async with unit_of_work(self.ctx) as uow:
                if await queries.take_cycle_slot(uow.session, name, timedelta(seconds=spec.interval_seconds)):
                    # A cycle that fails is simply retried at its next slot.
                    uow.enqueue(spec.kind, {}, max_attempts=1)

    async def run_once(self) -> bool:
        """Claim a batch and run it; True when there was anything to do."""
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            if not await queries.any_due(uow.session):
                return False
        async with unit_of_work(self.ctx) as uow:
            jobs = await queries.claim(uow.session, worker=self.name, lease=self.lease, limit=self.batch)
            claimed = [(j.id, j.kind, dict(j.payload), j.attempts, j.max_attempts) for j in jobs]
        if not claimed:
            return False
        heartbeat = asyncio.create_task(self._heartbeat([c[0] for c in claimed]))
        try:
            for job_id, kind, payload, attempt, max_attempts in claimed:
                await self.execute(job_id, kind, payload, attempt, max_attempts)
        finally:
            heartbeat.cancel()
        return True

    async def _heartbeat(self, job_ids: list[str]) -> None:
        while True:
            await asyncio.sleep(self.lease.total_seconds() / 3)
            try:
                async with unit_of_work(self.ctx) as uow:
                    await queries.extend_lease(uow.session, job_ids, self.name, self.lease)
            except Exception:
                log.warning("could not extend job leases", exc_info=True)

    async def execute(self, job_id: str, kind: str, payload: dict[str, object], attempt: int,
                      max_attempts: int) -> None:
        spec = self.registry.specs.get(kind)
        try:
            if spec is None:
                raise LookupError(f"no handler for job kind {kind!r}")
            async with unit_of_work(self.ctx, spec.tx) as uow:
                await spec.handler(JobRun(ctx=self.ctx, job_id=job_id, kind=kind, payload=payload,
                                          attempt=attempt, max_attempts=max_attempts, uow=uow))
                if not await queries.complete(await uow.begin_write(), job_id, self.name):
                    raise LeaseLost(job_id)
        except LeaseLost:
            log.warning("job %s (%s) was taken over by another process; discarded our result", job_id, kind)
        except Exception as exc:
            log.warning("job %s (%s) attempt %d failed: %s", job_id, kind, attempt, type(exc).__name__,
                        exc_info=True)
            try:
                async with unit_of_work(self.ctx) as uow:
                    await queries.fail(uow.session, job_id, self.name, f"{type(exc).__name__}: {exc}")
            except Exception:
                # The rest of the batch still runs; this job is retried when its lease runs out.
                log.warning("could not record the failure of job %s", job_id, exc_info=True)
