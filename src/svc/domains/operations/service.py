"""Operations: long-running changes with phases, one per project at a time (project teardown now;
database restore and delete later). Opening one is its area's use case; this area shows them."""

from __future__ import annotations

from svc.auth.roles import OrgAccess
from svc.domains.operations import queries
from svc.domains.operations.errors import OperationNotFound
from svc.domains.operations.kinds import OperationJob
from svc.models import Operation
from svc.uow import UnitOfWork


async def get_operation(uow: UnitOfWork, access: OrgAccess, op_id: str) -> Operation:
    """An operation of the caller's org; another org's is not found (no probing of ids)."""
    op = await queries.by_id(uow.session, op_id)
    if op is None or op.org_id != access.org.id:
        raise OperationNotFound()
    return op


async def running_for(uow: UnitOfWork, project_id: str) -> Operation | None:
    """The operation running on the project, if any (one at a time)."""
    return await queries.running_for(uow.session, project_id)


def run_teardown(uow: UnitOfWork, op: Operation) -> None:
    """Have a project's teardown run, phase by phase (jobs.py), once this unit of work commits."""
    uow.enqueue(OperationJob.project_teardown, {"operation_id": op.id})


async def running_projects(uow: UnitOfWork) -> set[str]:
    """The projects with an operation running (one query for all of them)."""
    return await queries.running_projects(uow.session)
