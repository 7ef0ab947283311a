"""Org roles (viewer < member < admin), enforced here and nowhere else."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Request

from svc.auth.caller import Principal
from svc.auth.principal import bearer_token, check_org_limits, read_cache, resolve
from svc.deps import request_session
from svc.errors import Forbidden, NotFound, Unauthorized
from svc.models import Org, Role

_RANK = {Role.viewer: 0, Role.member: 1, Role.admin: 2}


def at_least(role: Role, minimum: Role) -> bool:
    return _RANK[role] >= _RANK[minimum]


class OrgNotFound(NotFound):
    default_message = "No such org"


@dataclass(frozen=True)
class OrgAccess:
    org: Org
    role: Role
    principal: Principal


def check_role(org: Org | None, role_name: str | None, principal: Principal, minimum: Role) -> OrgAccess:
    """A non-member of an existing org gets 404, like a missing org, so slugs cannot be probed."""
    if org is None or role_name is None:
        raise OrgNotFound()
    role = Role(role_name)
    if not at_least(role, minimum):
        raise Forbidden(f"This needs the {minimum.value} role or higher; you are {role.value}",
                        details={"required": minimum.value, "role": role.value})
    return OrgAccess(org=org, role=role, principal=principal)


OrgSlugPath = Annotated[str, Path(alias="orgSlug", max_length=64)]
# The path parameter naming a project in an org's path (auth/projects.py), whose routes all check the
# project there (`project_access`).
PROJECT_PARAM = "projectName"


async def org_access(request: Request, token: str | None, org_slug: str, minimum: Role) -> OrgAccess:
    """The caller (by session or access token) in the org, with at least `minimum`: the one rule, for
    the API (bearer token) and the dashboard (session cookie) alike."""
    if token is None:
        raise Unauthorized()
    # Credential, org and role in one query: this runs on every org-scoped request. A read
    # request usually finds them in the credential cache instead (auth/cache.py).
    resolved = await resolve(request_session(request), token, org_slug, cache=read_cache(request))
    if resolved is None:
        raise Unauthorized("The token is invalid, expired or revoked")
    # A limited token's limits first: another org is 403 for it whether or not it exists.
    check_org_limits(request, resolved.principal, resolved.org, in_project=PROJECT_PARAM in request.path_params)
    return check_role(resolved.org, resolved.role, resolved.principal, minimum)


def require_role(minimum: Role) -> Callable[..., Awaitable[OrgAccess]]:
    async def dependency(request: Request, org_slug: OrgSlugPath) -> OrgAccess:
        return await org_access(request, bearer_token(request), org_slug, minimum)

    return dependency


ViewerAccess = Annotated[OrgAccess, Depends(require_role(Role.viewer))]
MemberAccess = Annotated[OrgAccess, Depends(require_role(Role.member))]
AdminAccess = Annotated[OrgAccess, Depends(require_role(Role.admin))]
