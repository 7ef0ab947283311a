"""`logs.expire`: the periodic cycle that drops log lines past their retention."""

from __future__ import annotations

from svc.domains.workers import service
from svc.domains.workers.kinds import WorkerJob
from svc.jobs.registry import JobRegistry, JobRun
from svc.settings import Config
from svc.uow import Tx, use_case

EXPIRE_EVERY_SECONDS = 600


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(WorkerJob.logs_expire, EXPIRE_EVERY_SECONDS, expire)


@use_case(Tx.WRITE)
async def expire(run: JobRun) -> None:
    await service.expire_logs(run.uow)
