"""The projects area's part of a project's teardown: the edge converges once more at the start
(the project was unrouted when the operation started), and at the end the project row goes, its
deployments, hostnames and secrets with it (foreign keys ON DELETE CASCADE)."""

from __future__ import annotations

from typing import Any

from svc.domains.projects import service
from svc.jobs.registry import JobRegistry, TeardownStep
from svc.models import Operation, TeardownPhase
from svc.settings import Config
from svc.uow import UnitOfWork


def register(registry: JobRegistry, config: Config) -> None:
    registry.teardown_step(TeardownStep(TeardownPhase.routing, write=unrouted))
    registry.teardown_step(TeardownStep(TeardownPhase.metadata, write=forget))


async def unrouted(uow: UnitOfWork, op: Operation, _: Any) -> None:
    await service.edge_changed(uow, op.project_id)


async def forget(uow: UnitOfWork, op: Operation, _: Any) -> None:
    await service.delete_project_row(uow.session, op.project_id)
    await service.edge_changed(uow, op.project_id)
