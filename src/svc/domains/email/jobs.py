"""The email area's jobs: the cycle that prunes the mail log after each plan's keepDays (rows and
their raw messages), and its part in a project's teardown: the grant goes first (mail to the
address is refused from then on), then the raw messages (the rows go with the project)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from svc.domains.email import handoff, outbound, queries, records
from svc.domains.email.kinds import EmailJob
from svc.domains.orgs import service as orgs
from svc.jobs.registry import JobRegistry, JobRun, TeardownStep
from svc.kit.clock import utcnow
from svc.models import Operation, Plan, TeardownPhase
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

PRUNE_EVERY_SECONDS = 3600.0
# The mail domain's records: a zone made for it later gets them within this, and a change is repaired.
RECORDS_EVERY_SECONDS = 600.0
# Rows deleted a run at most: a long backlog is pruned over several runs, never in one long transaction.
PRUNE_BATCH = 500


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(EmailJob.prune_cycle, PRUNE_EVERY_SECONDS, prune_cycle)
    registry.handler(EmailJob.to_worker, handoff.to_worker)
    registry.handler(EmailJob.send, outbound.deliver)
    registry.cycle(EmailJob.records_cycle, RECORDS_EVERY_SECONDS, records_cycle)
    registry.teardown_step(TeardownStep(TeardownPhase.routing, write=teardown_grant))
    registry.teardown_step(TeardownStep(TeardownPhase.files, outside=teardown_raw))


async def teardown_grant(uow: UnitOfWork, op: Operation, _: Any) -> None:
    await queries.remove_grant(uow.session, op.project_id)


async def teardown_raw(uow: UnitOfWork, op: Operation) -> None:
    """The project's raw messages (safe twice: deleting a blob is idempotent)."""
    keys = await queries.raw_keys(uow.session, op.project_id)
    await uow.close_reads()
    for key in keys:
        await uow.ctx.blobs.delete(key)


@use_case(Tx.WRITE)
async def prune_cycle(run: JobRun) -> None:
    """Rows older than their org's plan keeps are deleted; their raw messages once that commits
    (a blob left by a crash between is unreachable, and the next prune of a row finds none)."""
    blobs = run.ctx.blobs
    keys: list[str] = []
    for plan in Plan:
        keep = orgs.limits_of(run.ctx.config, plan).mail_keep_days
        rows = await queries.expired(run.session, plan, utcnow() - timedelta(days=keep), PRUNE_BATCH)
        keys += [r.raw_key for r in rows if r.raw_key]
        await queries.delete_entries(run.session, [r.id for r in rows])

    async def delete_raw() -> None:
        for key in keys:
            await blobs.delete(key)

    if keys:
        run.uow.after_commit(delete_raw)


@use_case(Tx.WRITE)
async def records_cycle(run: JobRun) -> None:
    await records.publish(run.uow)
