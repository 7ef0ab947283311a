"""The storage area's jobs: the usage cycle, which counts each grant's prefix in the object store
(usedBytes, reportedAt) and releases the reservations of writes a crashed process left in flight,
and its part in a project's teardown: the project's objects leave with it."""

from __future__ import annotations

import logging
from datetime import timedelta

from svc.domains.storage import errors, objects, queries
from svc.domains.storage.kinds import StorageJob
from svc.domains.storage.settings import StorageSettings
from svc.jobs.registry import JobRegistry, JobRun, TeardownStep
from svc.kit.clock import utcnow
from svc.models import Operation, TeardownPhase
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.storage")

# A write's reservation older than this belongs to a process that is gone (an upload still going
# after it loses its hold: its object counts once it settles, or at the next count).
RESERVATION_LIFETIME = timedelta(hours=1)


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(StorageJob.usage_cycle, config.settings_of(StorageSettings).storage_usage_seconds, usage_cycle)
    registry.teardown_step(TeardownStep(TeardownPhase.files, outside=teardown_objects))


@use_case(Tx.READ_THEN_WRITE)  # the store is counted with nothing of the state store held
async def usage_cycle(run: JobRun) -> None:
    await count_usage(run.uow)


async def count_usage(uow: UnitOfWork) -> int:
    """Count every grant's prefix (revoked ones too: their objects are kept), write what each
    uses, and release stale reservations; how many prefixes were counted. svc's own writes that
    settle while a prefix is counted are added to the count (queries.report): usedBytes may be
    over until the next count, never under, so the quota stays on the safe side."""
    grants = await queries.prefixes(uow.session)
    await uow.close_reads()
    store = uow.ctx.adapters.objects
    counted: list[tuple[str, int, int]] = []
    if store is not None:
        for project_id, prefix, seen in grants:
            used, _ = await store.usage(prefix)
            counted.append((project_id, used, seen))
    session = await uow.begin_write()
    now = utcnow()
    for project_id, used, seen in counted:
        await queries.report(session, project_id, used, seen, now)
    released = await queries.release_before(session, now - RESERVATION_LIFETIME)
    if released:
        log.warning("storage: released %d reservations of writes that never settled (a crash)", released)
    return len(counted)


async def teardown_objects(uow: UnitOfWork, op: Operation) -> None:
    """The project's objects deleted (safe twice). Without an object store, a project that had a
    grant waits for one (the phase is retried): its objects must not stay behind."""
    grant = await queries.grant(uow.session, op.project_id)
    await uow.close_reads()
    store = uow.ctx.adapters.objects
    if store is None:
        if grant is not None:
            raise errors.StorageUnavailable("The project's objects cannot be deleted: this svc has no object store")
        return
    deleted = await store.delete_prefix(grant.prefix if grant is not None else objects.prefix_for(op.project_id))
    if deleted:
        log.info("storage: deleted %d objects of project %s", deleted, op.project_id)
