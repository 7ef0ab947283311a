"""HTTP only: the access policy API (spec "Deployment access control").

Changes the edge must follow (policy, bypass secret) converge this process's edge after their
commit, before the answer (projects.service.edge_changed), so a 2xx means the change is live here."""

from __future__ import annotations

from fastapi import Response

from svc.auth.principal import CurrentPrincipal
from svc.auth.projects import ProjectAdmin, ProjectViewer
from svc.deps import Ctx, Uow, api_router
from svc.domains.access import schemas, service

router = api_router(tags=["access"])

ACCESS = "/v1/orgs/{orgSlug}/projects/{projectName}/access"


@router.get(ACCESS, response_model=schemas.AccessPolicy, operation_id="getAccessPolicy")
async def get_policy(p: ProjectViewer) -> schemas.AccessPolicy:
    return schemas.AccessPolicy.of(p.project)


@router.put(ACCESS, response_model=schemas.AccessPolicy, operation_id="setAccessPolicy")
async def put_policy(body: schemas.AccessPolicyPut, p: ProjectAdmin, uow: Uow) -> schemas.AccessPolicy:
    """Every PUT bumps the access generation: cookies issued under the old policy stop working."""
    return await service.set_policy(uow, p.access, p.project, mode=body.mode, password=body.password)


@router.post(ACCESS + "/bypass", response_model=schemas.AccessBypass, operation_id="newAccessBypass")
async def new_bypass(p: ProjectAdmin, uow: Uow) -> schemas.AccessBypass:
    return schemas.AccessBypass(secret=await service.new_bypass(uow, p.access, p.project))


@router.delete(ACCESS + "/bypass", status_code=204, response_class=Response, operation_id="revokeAccessBypass")
async def revoke_bypass(p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke_bypass(uow, p.access, p.project)
    return Response(status_code=204)


@router.post("/v1/access/authorize", response_model=schemas.AccessAuthorize, operation_id="authorizeAccess")
async def authorize(body: schemas.AccessAuthorizeRequest, principal: CurrentPrincipal, uow: Uow,
                    ctx: Ctx) -> schemas.AccessAuthorize:
    """The dashboard's authorize page calls this after sign-in: the redirect carries a one-time
    code (60 s) that the project host's /__svc/callback exchanges for its cookie."""
    redirect = await service.authorize(uow, principal, to=body.to, next_path=body.next, config=ctx.config)
    return schemas.AccessAuthorize(redirect=redirect)
