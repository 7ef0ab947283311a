"""The access area's part of a project's teardown: the one-time access codes of its hostnames go
(before the hostnames do)."""

from __future__ import annotations

from typing import Any

from svc.domains.access import service
from svc.jobs.registry import JobRegistry, TeardownStep
from svc.models import Operation, TeardownPhase
from svc.settings import Config
from svc.uow import UnitOfWork


def register(registry: JobRegistry, config: Config) -> None:
    registry.teardown_step(TeardownStep(TeardownPhase.grants, write=forget_grants))


async def forget_grants(uow: UnitOfWork, op: Operation, _: Any) -> None:
    await service.forget_project_grants(uow.session, op.project_id)
