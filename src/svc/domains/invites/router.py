"""HTTP only: invites of an org (admins) and the invite link (preview without sign-in, accept)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Response

from svc.auth.principal import CurrentPrincipal
from svc.auth.roles import AdminAccess
from svc.deps import Ctx, Uow, api_router
from svc.domains.invites import schemas, service
from svc.kit.clock import utcnow

router = api_router(tags=["invites"])

# Ids are a prefix and base62 (svc.kit.ids); anything else is malformed, and never reaches SQL.
InviteIdPath = Annotated[str, Path(alias="inviteId", max_length=64, pattern=r"^[A-Za-z0-9_]+$")]
# Tokens are 43 characters; anything much longer is not one of ours.
TokenPath = Annotated[str, Path(alias="token", min_length=1, max_length=128)]


@router.get("/v1/orgs/{orgSlug}/invites", response_model=schemas.InviteList, operation_id="listInvites")
async def list_invites(access: AdminAccess, uow: Uow) -> schemas.InviteList:
    return schemas.InviteList(invites=await service.list_invites(uow, access.org.id))


@router.post("/v1/orgs/{orgSlug}/invites", status_code=201, response_model=schemas.Invite,
             operation_id="createInvite",
             responses={200: {"model": schemas.Invite, "description": "Re-invite of the same address: the same "
                                                                     "invite with a new token and expiry"}})
async def create_invite(body: schemas.InviteCreate, access: AdminAccess, uow: Uow, ctx: Ctx,
                        response: Response) -> schemas.Invite:
    issued = await service.invite(uow, access, email=body.email, role=body.role, settings=ctx.settings)
    if not issued.created:
        response.status_code = 200
    return service.invite_schema(issued.invite, utcnow(), token=issued.token)


@router.delete("/v1/orgs/{orgSlug}/invites/{inviteId}", status_code=204, response_class=Response,
               operation_id="revokeInvite")
async def revoke_invite(invite_id: InviteIdPath, access: AdminAccess, uow: Uow) -> Response:
    await service.revoke(uow, access, invite_id)
    return Response(status_code=204)


@router.get("/v1/invites/{token}", response_model=schemas.InviteView, operation_id="getInvite")
async def get_invite(token: TokenPath, uow: Uow) -> schemas.InviteView:
    return await service.preview(uow, token)


@router.post("/v1/invites/{token}/accept", response_model=schemas.InviteAccepted, operation_id="acceptInvite")
async def accept_invite(token: TokenPath, principal: CurrentPrincipal, uow: Uow,
                        ctx: Ctx) -> schemas.InviteAccepted:
    already, org = await service.accept(uow, principal, token, ctx.settings)
    return schemas.InviteAccepted(already_member=already, org=org)
