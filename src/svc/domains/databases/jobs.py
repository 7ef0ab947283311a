"""The databases area's jobs: the hourly cycle (change checks, retention), a generation, its
verification, the phases of restore and delete (operations.py), and the watchdog's turn
(watchdog.py). Each reads, lets go of the
store for the work on the node and the blob store, then writes (Tx.READ_THEN_WRITE)."""

from __future__ import annotations

import logging

from svc.adapters.database.port import DatabaseNodeError
from svc.domains.databases import generations, operations, queries, service, watchdog
from svc.domains.databases.kinds import DatabaseJob
from svc.domains.databases.settings import DatabaseSettings
from svc.domains.notifications import service as notifications
from svc.domains.operations.service import running_for, running_projects
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.jobs.registry import JobRegistry, JobRun, TeardownStep
from svc.kit.clock import utcnow
from svc.models import DatabaseGeneration, GenerationKind, Operation, TeardownPhase
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.databases")


def register(registry: JobRegistry, config: Config) -> None:
    own = DatabaseSettings()
    registry.cycle(DatabaseJob.cycle, own.database_backup_seconds, cycle)
    registry.handler(DatabaseJob.generation, take_generation)
    registry.handler(DatabaseJob.verify, verify_generation)
    registry.handler(DatabaseJob.operation, operations.step)
    registry.cycle(DatabaseJob.watchdog, own.database_watchdog_seconds, watchdog.watch)
    registry.teardown_step(TeardownStep(TeardownPhase.database, outside=teardown_take, write=teardown_record))


async def teardown_take(uow: UnitOfWork, op: Operation) -> generations.Taken | None:
    """A project's teardown: its database drained, its final generation taken, then dropped."""
    return await service.teardown_take(uow, op.project_id)


async def teardown_record(uow: UnitOfWork, op: Operation, taken: generations.Taken | None) -> None:
    """A project's teardown: the final generation listed, the grant gone."""
    await service.teardown_record(uow, op.project_id, taken)


@use_case(Tx.READ_THEN_WRITE)  # the node is asked with nothing of the store held
async def cycle(run: JobRun) -> None:
    """One turn of the hourly grid: a generation for each database that changed since its last,
    the check's time recorded for the others (lastCheckedAt), and retention applied."""
    await check_all(run.uow)


async def check_all(uow: UnitOfWork) -> int:
    """The cycle's work (also what a test or an operator runs at once): how many generations it asked for."""
    node = uow.ctx.adapters.database
    if node is None:
        return 0
    grants = await queries.all_grants(uow.session)
    if not grants:
        return 0
    ids = [g.project_id for g in grants]
    await uow.close_reads()
    try:
        markers = await node.change_markers(ids)
    except DatabaseNodeError as exc:
        log.warning("database change checks: %s", exc)
        return 0
    session = await uow.begin_write()
    now = utcnow()
    asked = 0
    busy = await running_projects(uow)
    for grant in await queries.all_grants(session):
        if grant.project_id in busy:
            continue
        if generations.needs_generation(grant, markers.get(grant.project_id)):
            uow.enqueue(DatabaseJob.generation, {"project_id": grant.project_id,
                                                      "kind": GenerationKind.scheduled.value})
            asked += 1
        else:
            grant.last_checked_at = now
    await prune(uow, ids)
    return asked


async def prune(uow: UnitOfWork, project_ids: list[str]) -> None:
    """Retention (DatabaseSettings): the rows go in this transaction, their archives after it."""
    own = uow.ctx.settings_of(DatabaseSettings)
    rows = await queries.generations_of(uow.session, project_ids, [k.value for k in generations.PRUNABLE])
    by_project: dict[str, list[DatabaseGeneration]] = {}
    for row in rows:
        by_project.setdefault(row.project_id, []).append(row)
    gone = [g for project_rows in by_project.values()
            for g in generations.prunable(project_rows, keep_hourly=own.database_keep_hourly,
                                          keep_daily=own.database_keep_daily, now=utcnow())]
    if not gone:
        return
    await queries.delete_generations(uow.session, [g.id for g in gone])
    keys = [g.blob_key for g in gone]
    blobs = uow.ctx.blobs

    async def remove_archives() -> None:
        for key in keys:
            await blobs.delete(key)

    uow.after_commit(remove_archives)


@use_case(Tx.READ_THEN_WRITE)  # pg_dump and the upload run with nothing of the store held
async def take_generation(run: JobRun) -> None:
    project_id = str(run.payload["project_id"])
    kind = GenerationKind(str(run.payload.get("kind", GenerationKind.scheduled.value)))
    node = run.ctx.adapters.database
    grant = await queries.grant(run.session, project_id)
    if node is None or grant is None or await running_for(run.uow, project_id) is not None:
        return
    epoch = grant.epoch
    await run.uow.close_reads()
    if kind is GenerationKind.scheduled:
        markers = await node.change_markers([project_id])
        if not generations.needs_generation(grant, markers.get(project_id)):
            return  # taken meanwhile (a second cycle's job for the same change)
    try:
        taken = await generations.take(run.ctx, node, project_id, epoch)
    except DatabaseNodeError as exc:
        if not run.last_attempt:
            raise
        await _failed_backup(run, project_id, str(exc))
        return
    session = await run.uow.begin_write()
    await queries.lock_project(session, project_id)
    grant = await queries.grant(session, project_id)
    if grant is None or grant.epoch != epoch:  # deleted or restored meanwhile: the archive is nobody's
        blobs = run.ctx.blobs
        run.uow.after_commit(lambda: blobs.delete(taken.blob_key))
        return
    seq = await queries.next_seq(session, project_id, epoch, [k.value for k in generations.LISTED])
    session.add(generations.row_of(taken, project_id, epoch, seq, kind))
    grant.change_marker = taken.marker
    grant.last_checked_at = taken.taken_at
    run.uow.enqueue(DatabaseJob.verify, {"generation_id": taken.id})


async def _failed_backup(run: JobRun, project_id: str, reason: str) -> None:
    session = await run.uow.begin_write()
    project = await projects.project_by_id(session, project_id)
    org = await orgs.org_by_id(run.uow, project.org_id) if project is not None else None
    if project is None or org is None:
        return
    await notifications.mailed(run.uow, org, kind="backup.failed", project=project.name, settings=run.ctx.settings,
                               subject=f"a backup of {project.name}'s database failed",
                               message=f"The hourly backup of {project.name}'s database failed: {reason}. "
                                       "svc tries again at the next change check.")


@use_case(Tx.READ_THEN_WRITE)  # the scratch restore runs with nothing of the store held
async def verify_generation(run: JobRun) -> None:
    generation_id = str(run.payload["generation_id"])
    node = run.ctx.adapters.database
    row = await queries.generation(run.session, generation_id)
    if node is None or row is None or row.verified is not None:
        return
    await run.uow.close_reads()
    result = await generations.verify(run.ctx, node, row)
    await run.uow.begin_write()
    await service.record_verification(run.uow, generation_id, result)
