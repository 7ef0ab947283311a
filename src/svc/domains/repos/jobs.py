"""The repos area's background work: the purge cycle, which removes the disk copy of each repository
deleted longer ago than the retention period (SVC_REPO_RETENTION_DAYS), then its row. The disk goes
first: a crash between leaves a row whose next purge finds nothing to remove."""

from __future__ import annotations

import logging

from svc.domains.repos import queries, service
from svc.domains.repos.kinds import RepoJob
from svc.jobs.registry import JobRegistry, JobRun, TeardownStep
from svc.kit.clock import utcnow
from svc.models import Operation, TeardownPhase
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

log = logging.getLogger("svc.repos")

PURGE_CYCLE_SECONDS = 3600.0
PURGE_BATCH = 100


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(RepoJob.purge_cycle, PURGE_CYCLE_SECONDS, purge_cycle)
    registry.teardown_step(TeardownStep(TeardownPhase.files, outside=teardown_files))


async def teardown_files(uow: UnitOfWork, op: Operation) -> None:
    """A project's teardown: the disk copies of its git repositories (their rows go with the project)."""
    repo_ids = await service.project_repo_ids(uow, op.project_id)
    await uow.close_reads()
    await service.remove_disk_copies(uow.ctx, repo_ids)


@use_case(Tx.READ_THEN_WRITE)  # the disk is cleared with nothing of the store held
async def purge_cycle(run: JobRun) -> None:
    node = run.ctx.adapters.git
    if node is None:
        return
    due = [repo.id for repo in await queries.purgeable(run.session, utcnow() - service.retention(run.ctx), PURGE_BATCH)]
    await run.uow.close_reads()
    for repo_id in due:
        await node.remove(repo_id)
        async with unit_of_work(run.ctx, Tx.WRITE) as uow:
            await queries.forget_deleted(uow.session, repo_id)  # nothing when another run did it first
    if due:
        log.info("purged %d deleted repositories", len(due))
