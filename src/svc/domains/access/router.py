"""HTTP only: the access policy API (spec "Deployment access control").

Changes the edge must follow (policy, bypass secret) are committed first and then converged on
this process's edge (`ctx.edge.converge_now()`), so a 2xx means the change is live here."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response

from svc.auth.principal import CurrentPrincipal
from svc.deps import Ctx, Session, TransactionalRoute
from svc.domains.access import schemas, service
from svc.domains.projects.deps import ProjectAdmin, ProjectViewer

EDGE_CHANGED = "access_edge_changed"


class ConvergingRoute(TransactionalRoute):
    """The request's transaction, then (after its commit, before the response is sent) the edge
    converges when the endpoint marked the request."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def then_converge(request: Request) -> Response:
            response = await handler(request)  # committed once this returns
            if getattr(request.state, EDGE_CHANGED, False):
                await service.converge(request.app.state.ctx)
            return response

        return then_converge


router = APIRouter(route_class=ConvergingRoute, tags=["access"])

ACCESS = "/v1/orgs/{orgSlug}/projects/{projectName}/access"


def _edge_changed(request: Request) -> None:
    setattr(request.state, EDGE_CHANGED, True)


@router.get(ACCESS, response_model=schemas.AccessPolicy, operation_id="getAccessPolicy")
async def get_policy(p: ProjectViewer) -> schemas.AccessPolicy:
    return service.policy_view(p.project)


@router.put(ACCESS, response_model=schemas.AccessPolicy, operation_id="setAccessPolicy")
async def put_policy(body: schemas.AccessPolicyPut, p: ProjectAdmin, session: Session,
                     request: Request) -> schemas.AccessPolicy:
    """Every PUT bumps the access generation: cookies issued under the old policy stop working."""
    policy = await service.set_policy(session, p.access, p.project, mode=body.mode, password=body.password)
    _edge_changed(request)
    return policy


@router.post(ACCESS + "/bypass", response_model=schemas.AccessBypass, operation_id="newAccessBypass")
async def new_bypass(p: ProjectAdmin, session: Session, request: Request) -> schemas.AccessBypass:
    secret = await service.new_bypass(session, p.access, p.project)
    _edge_changed(request)
    return schemas.AccessBypass(secret=secret)


@router.delete(ACCESS + "/bypass", status_code=204, response_class=Response, operation_id="revokeAccessBypass")
async def revoke_bypass(p: ProjectAdmin, session: Session, request: Request) -> Response:
    await service.revoke_bypass(session, p.access, p.project)
    _edge_changed(request)
    return Response(status_code=204)


@router.post("/v1/access/authorize", response_model=schemas.AccessAuthorize, operation_id="authorizeAccess")
async def authorize(body: schemas.AccessAuthorizeRequest, principal: CurrentPrincipal, session: Session,
                    ctx: Ctx) -> schemas.AccessAuthorize:
    """The dashboard's authorize page calls this after sign-in: the redirect carries a one-time
    code (60 s) that the project host's /__svc/callback exchanges for its cookie."""
    redirect = await service.authorize(session, principal, to=body.to, next_path=body.next, settings=ctx.settings)
    return schemas.AccessAuthorize(redirect=redirect)
