"""Org roles (viewer < member < admin), enforced here and nowhere else."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from fastapi import Depends, Path
from sqlalchemy import bindparam, select

from svc.auth.principal import CurrentPrincipal, Principal
from svc.deps import Session
from svc.errors import Forbidden, NotFound
from svc.models import Membership, Org


class Role(StrEnum):
    viewer = "viewer"
    member = "member"
    admin = "admin"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def at_least(self, other: Role) -> bool:
        return self.rank >= other.rank


_RANK = {Role.viewer: 0, Role.member: 1, Role.admin: 2}


class OrgNotFound(NotFound):
    default_message = "No such org"


@dataclass(frozen=True)
class OrgAccess:
    org: Org
    role: Role
    principal: Principal


# Built once: every org-scoped request runs it.
_ORG_AND_ROLE = (
    select(Org, Membership.role).join(Membership, Membership.org_id == Org.id)
    .where(Org.slug == bindparam("slug"), Membership.user_id == bindparam("user_id")))


async def authorize_org(session: Session, principal: Principal, org_slug: str, minimum: Role) -> OrgAccess:
    """A non-member of an existing org gets 404, like a missing org, so slugs cannot be probed."""
    row = (await session.execute(_ORG_AND_ROLE, {"slug": org_slug, "user_id": principal.user.id})).first()
    if row is None:
        raise OrgNotFound()
    org, role_name = row
    role = Role(role_name)
    if not role.at_least(minimum):
        raise Forbidden(f"This needs the {minimum.value} role or higher; you are {role.value}",
                        details={"required": minimum.value, "role": role.value})
    return OrgAccess(org=org, role=role, principal=principal)


OrgSlugPath = Annotated[str, Path(alias="orgSlug", max_length=64)]


def require_role(minimum: Role) -> Callable[..., Awaitable[OrgAccess]]:
    async def dependency(org_slug: OrgSlugPath, principal: CurrentPrincipal, session: Session) -> OrgAccess:
        return await authorize_org(session, principal, org_slug, minimum)

    return dependency


ViewerAccess = Annotated[OrgAccess, Depends(require_role(Role.viewer))]
MemberAccess = Annotated[OrgAccess, Depends(require_role(Role.member))]
AdminAccess = Annotated[OrgAccess, Depends(require_role(Role.admin))]
