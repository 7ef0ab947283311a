"""Who is looking at a page, from the session cookie: the same credential lookup and role rule as
the API (auth/roles.py `org_access`, projects/deps.py `project_access`), told apart only in what a
failure becomes (a sign-in redirect or a "session ended" page instead of a 401 envelope)."""

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request

from svc.auth.caller import Principal
from svc.auth.principal import read_cache, resolve_principal
from svc.auth.projects import ProjectAccess, ProjectNamePath, project_access
from svc.auth.roles import OrgAccess, OrgSlugPath, org_access
from svc.context import AppContext
from svc.deps import request_session
from svc.errors import NotFound, Unauthorized
from svc.models import Role
from svc.web.routing import SignInNeeded
from svc.web.session import session_token

# No `from __future__ import annotations`: FastAPI must see the dependencies built from closure
# variables as real annotations.


def _token(request: Request) -> str:
    ctx: AppContext = request.app.state.ctx
    token = session_token(request, ctx.settings)
    if token is None:
        raise SignInNeeded(ended=False)
    return token


async def signed_in(request: Request) -> Principal:
    principal = await resolve_principal(request_session(request), _token(request), cache=read_cache(request))
    if principal is None or principal.kind != "session":
        raise SignInNeeded(ended=True)
    request.state.viewer = principal
    return principal


async def operator(request: Request) -> Principal:
    """A signed-in person named in SVC_OPERATORS; anyone else finds no such page (404), so the
    operator pages are not even shown to exist."""
    principal = await signed_in(request)
    ctx: AppContext = request.app.state.ctx
    user = principal.user
    if user is None or not ctx.settings.is_operator(email=user.email, provider=user.provider, subject=user.subject):
        raise NotFound()
    return principal


def org_page(minimum: Role) -> Callable[..., Awaitable[OrgAccess]]:
    async def dependency(request: Request, org_slug: OrgSlugPath) -> OrgAccess:
        request.state.org_slug = org_slug
        try:
            access = await org_access(request, _token(request), org_slug, minimum)
        except SignInNeeded:
            raise
        except Unauthorized:
            raise SignInNeeded(ended=True) from None
        request.state.viewer = access.principal
        return access

    return dependency


def project_page(minimum: Role) -> Callable[..., Awaitable[ProjectAccess]]:
    async def dependency(request: Request, access: Annotated[OrgAccess, Depends(org_page(minimum))],
                         project_name: ProjectNamePath) -> ProjectAccess:
        request.state.project_name = project_name
        return await project_access(request, access, project_name)

    return dependency


SignedIn = Annotated[Principal, Depends(signed_in)]
Operator = Annotated[Principal, Depends(operator)]
OrgViewer = Annotated[OrgAccess, Depends(org_page(Role.viewer))]
OrgMember = Annotated[OrgAccess, Depends(org_page(Role.member))]
OrgAdmin = Annotated[OrgAccess, Depends(org_page(Role.admin))]
ProjectViewer = Annotated[ProjectAccess, Depends(project_page(Role.viewer))]
ProjectMember = Annotated[ProjectAccess, Depends(project_page(Role.member))]
ProjectAdmin = Annotated[ProjectAccess, Depends(project_page(Role.admin))]
