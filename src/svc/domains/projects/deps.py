"""The project named in the path, for callers with at least a given org role.

No `from __future__ import annotations` here: FastAPI must see the dependency built from the
closure variable `minimum` as a real annotation, not a string it cannot resolve."""


from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Request

from svc.auth.roles import OrgAccess, require_role
from svc.deps import READ_METHODS, request_session
from svc.domains.projects import queries
from svc.domains.projects.errors import OperationInFlight, ProjectNotFound
from svc.models import Project, ProjectState, Role

ProjectNamePath = Annotated[str, Path(alias="projectName", max_length=64)]


@dataclass(frozen=True)
class ProjectAccess:
    access: OrgAccess
    project: Project


async def project_access(request: Request, access: OrgAccess, project_name: str) -> ProjectAccess:
    """A project being deleted can be looked at but not changed: every write to it (deploy,
    rollback, secrets, access policy, a second delete) is 409 op_in_flight. For the API and the
    dashboard alike."""
    project = await queries.by_name(request_session(request), access.org.id, project_name)
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
