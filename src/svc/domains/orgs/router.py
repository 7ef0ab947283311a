"""HTTP only: orgs and members."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Response

from svc.auth.principal import CurrentPrincipal
from svc.auth.roles import AdminAccess, MemberAccess, ViewerAccess
from svc.deps import Ctx, Uow, api_router
from svc.domains.orgs import schemas, service
from svc.domains.orgs.schemas import OrgMembership
from svc.models import Membership, User

router = api_router(tags=["orgs"])

UserIdPath = Annotated[str, Path(alias="userId", max_length=64)]


def _member(m: Membership, u: User) -> schemas.Member:
    return schemas.Member(user=schemas.User.model_validate(u), role=m.role, joined_at=m.created_at)


@router.get("/v1/orgs", response_model=schemas.OrgList, operation_id="listOrgs")
async def list_orgs(principal: CurrentPrincipal, uow: Uow, ctx: Ctx) -> schemas.OrgList:
    return schemas.OrgList(orgs=await service.memberships_of(uow, principal.user, ctx.config))


@router.post("/v1/orgs", status_code=201, response_model=schemas.Org, operation_id="createOrg")
async def create_org(body: schemas.OrgCreate, principal: CurrentPrincipal, uow: Uow) -> schemas.Org:
    org = await service.create_org(uow, slug=body.slug, name=body.name, creator=principal.user)
    return schemas.Org.model_validate(org)


@router.patch("/v1/orgs/{orgSlug}", response_model=OrgMembership, operation_id="renameOrg")
async def rename_org(body: schemas.OrgPatch, access: AdminAccess, uow: Uow, ctx: Ctx) -> OrgMembership:
    return await service.rename_org(uow, access, body.name, ctx.config)


@router.delete("/v1/orgs/{orgSlug}", status_code=204, response_class=Response, operation_id="deleteOrg")
async def delete_org(body: schemas.OrgDelete, access: AdminAccess, uow: Uow) -> Response:
    await service.delete_org(uow, access, body.confirm)
    return Response(status_code=204)


@router.get("/v1/orgs/{orgSlug}/members", response_model=schemas.MemberList, operation_id="listMembers")
async def list_members(access: MemberAccess, uow: Uow) -> schemas.MemberList:
    rows = await service.list_members(uow, access.org.id)
    # Validated from plain dicts in one call (pydantic's core), not model by model: the hottest list.
    return schemas.MemberList.model_validate({"members": [
        {"user": {"id": uid, "provider": provider, "subject": subject, "email": email, "name": name},
         "role": role, "joined_at": joined_at}
        for uid, provider, subject, email, name, role, joined_at in rows]})


@router.post("/v1/orgs/{orgSlug}/members", status_code=201, response_model=schemas.Member,
             operation_id="addMember")
async def add_member(body: schemas.MemberAdd, access: AdminAccess, uow: Uow) -> schemas.Member:
    m, u = await service.add_member(uow, access, provider=body.provider, subject=body.subject, role=body.role)
    return _member(m, u)


@router.put("/v1/orgs/{orgSlug}/members/{userId}", response_model=schemas.Member, operation_id="setMemberRole")
async def set_member_role(body: schemas.MemberRole, user_id: UserIdPath, access: AdminAccess,
                          uow: Uow) -> schemas.Member:
    m, u = await service.set_role(uow, access, user_id, body.role)
    return _member(m, u)


@router.delete("/v1/orgs/{orgSlug}/members/{userId}", status_code=204, response_class=Response,
               operation_id="removeMember")
async def remove_member(user_id: UserIdPath, access: ViewerAccess, uow: Uow) -> Response:
    await service.remove_member(uow, access, user_id)
    return Response(status_code=204)
