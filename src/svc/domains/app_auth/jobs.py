"""The end-user auth area's jobs: the schema cycle, which migrates the svc_auth schema of every
granted project still at an older version than this svc's (a grant migrates its own project at
once; this is for the projects granted before an upgrade of svc)."""

from __future__ import annotations

import logging

from svc.domains.app_auth import queries, schema
from svc.domains.app_auth.kinds import AuthJob
from svc.errors import AppError
from svc.jobs.registry import JobRegistry, JobRun
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.app_auth")

SCHEMA_CYCLE_SECONDS = 3600.0


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(AuthJob.schema_cycle, SCHEMA_CYCLE_SECONDS, schema_cycle)


@use_case(Tx.READ_THEN_WRITE)  # the projects' databases are migrated with nothing of the store held
async def schema_cycle(run: JobRun) -> None:
    await migrate_behind(run.uow)


async def migrate_behind(uow: UnitOfWork) -> int:
    """Migrate each granted project behind schema.LATEST; how many were brought to it. A project
    whose database does not answer now is left for the next turn (said in the log)."""
    behind = await queries.behind(uow.session, schema.LATEST)
    done: list[str] = []
    for project_id in behind:
        try:
            await schema.migrate(uow, project_id)
        except AppError as exc:
            log.warning("auth: the svc_auth schema of project %s stays behind for now: %s", project_id, exc.message)
            continue
        done.append(project_id)
    await uow.close_reads()
    if done:
        session = await uow.begin_write()
        await queries.migrated(session, done, schema.LATEST)
    return len(done)
