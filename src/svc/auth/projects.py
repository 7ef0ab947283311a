"""The project named in the path, for callers with at least a given org role: the API's and the
dashboard's one rule (auth/roles.py for the org; here the project in it).

No `from __future__ import annotations` here: FastAPI must see the dependency built from the
closure variable `minimum` as a real annotation, not a string it cannot resolve."""


from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Request
from sqlalchemy import select

from svc.auth.principal import check_project_limit
from svc.auth.roles import PROJECT_PARAM, OrgAccess, require_role
from svc.deps import READ_METHODS, request_session
from svc.errors import Conflict, NotFound
from svc.kit.store_session import StoreSession
from svc.models import Project, ProjectState, Role

ProjectNamePath = Annotated[str, Path(alias=PROJECT_PARAM, max_length=64)]


class ProjectNotFound(NotFound):
    default_message = "No such project"


class OperationInFlight(Conflict):
    code = "op_in_flight"
    default_message = "Another operation is running on this project"


@dataclass(frozen=True)
class ProjectAccess:
    access: OrgAccess
    project: Project


async def project_by_name(session: StoreSession, org_id: str, name: str, *, lock: bool = False) -> Project | None:
    """The org's project of that name; `lock`: held until the transaction ends (PostgreSQL's row
    lock; SQLite's writers are serialised anyway, and it renders no FOR UPDATE)."""
    stmt = select(Project).where(Project.org_id == org_id, Project.name == name)
    if lock:
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt)).first()


async def project_access(request: Request, access: OrgAccess, project_name: str) -> ProjectAccess:
    """A project being deleted can be looked at but not changed: every write to it (deploy,
    rollback, secrets, access policy, a second delete) is 409 op_in_flight. For the API and the
    dashboard alike."""
    project = await project_by_name(request_session(request), access.org.id, project_name)
    # A token limited to another project learns nothing of this one, not even whether it exists.
    check_project_limit(access.principal, None if project is None else project.id)
    if project is None:
        raise ProjectNotFound()
    if project.state != ProjectState.active and request.method not in READ_METHODS:
        raise OperationInFlight("The project is being deleted")
    return ProjectAccess(access=access, project=project)


def require_project(minimum: Role) -> Callable[..., Awaitable[ProjectAccess]]:
    async def dependency(request: Request, access: Annotated[OrgAccess, Depends(require_role(minimum))],
                         project_name: ProjectNamePath) -> ProjectAccess:
        return await project_access(request, access, project_name)

    return dependency


ProjectViewer = Annotated[ProjectAccess, Depends(require_project(Role.viewer))]
ProjectMember = Annotated[ProjectAccess, Depends(require_project(Role.member))]
ProjectAdmin = Annotated[ProjectAccess, Depends(require_project(Role.admin))]
