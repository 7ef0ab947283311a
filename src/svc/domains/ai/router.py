"""HTTP only: the model catalog, a project's AI grant, and the org's credit and ledger (spec "AI")."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Body, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from svc.auth.principal import CurrentPrincipal
from svc.auth.projects import ProjectAdmin, ProjectMember, ProjectViewer
from svc.auth.roles import AdminAccess, MemberAccess
from svc.context import AppContext
from svc.deps import Uow, api_router
from svc.domains.ai import schemas, service, topups
from svc.domains.workers import service as workers
from svc.domains.workers.schemas import RUNTIME_PROJECT_ID
from svc.errors import BadRequest, NotFound
from svc.uow import runs

router = api_router(tags=["ai"])
# What a worker's env.ai calls (the runtime's, with its token): not part of the public API.
runtime_router = api_router(include_in_schema=False)

_PROJECT = "/v1/orgs/{orgSlug}/projects/{projectName}/ai"
_ORG = "/v1/orgs/{orgSlug}/ai"


@router.get("/v1/ai/models", response_model=schemas.Catalog, response_model_exclude_none=True,
            operation_id="listAIModels", summary="Every model env.ai can call, with its lane and price")
async def list_models(_: CurrentPrincipal, uow: Uow) -> schemas.Catalog:
    return service.catalog_view(uow)


@router.get(_PROJECT, response_model=schemas.AIStatus, operation_id="getAI")
async def get_ai(p: ProjectViewer, uow: Uow) -> schemas.AIStatus:
    return await service.status(uow, p.access.org, p.project)


@router.post(_PROJECT, response_model=schemas.AIStatus, operation_id="grantAI",
             summary="Let the project call env.ai (its bundle declaring \"ai\": true); idempotent")
@runs(service.grant)
async def grant_ai(p: ProjectMember, uow: Uow) -> schemas.AIStatus:
    return await service.grant(uow, p.access, p.project)


@router.delete(_PROJECT, status_code=204, operation_id="revokeAI",
               summary="Stop env.ai; the ledger and the org's balance are kept; idempotent")
@runs(service.revoke)
async def revoke_ai(p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return Response(status_code=204)


@router.get(_ORG + "/credit", response_model=schemas.AICredit, operation_id="getAICredit")
async def get_credit(access: MemberAccess, uow: Uow) -> schemas.AICredit:
    return await service.credit(uow, access.org)


_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}


@router.post(_ORG + "/credit/checkout", response_model=schemas.CheckoutUrl, operation_id="buyAICredit",
             responses={501: {"description": "No credit product on this svc (billing_off)", "content": _ERROR},
                        502: {"description": "The billing provider did not answer", "content": _ERROR}},
             summary="The provider's checkout for a tier of AI credit (the balance rises with order.paid)")
@runs(topups.checkout)
async def buy_credit(body: schemas.CreditCheckoutRequest, access: AdminAccess, uow: Uow) -> schemas.CheckoutUrl:
    return schemas.CheckoutUrl(url=await topups.checkout(uow, access, body.micro_cents, body.return_to))


@router.put(_ORG + "/autotopup", response_model=schemas.AutoTopup, operation_id="setAIAutoTopup",
            responses={204: {"description": "Auto top-up is off"}},
            summary="Consent to automatic top-ups from the stored payment method (enabled), or withdraw it")
@runs(topups.set_autotopup)
async def set_autotopup(body: Annotated[schemas.AutoTopupRequest, Body()], access: AdminAccess, uow: Uow) -> Response:
    if isinstance(body, schemas.AutoTopupOn):
        row = await topups.set_autotopup(uow, access, True, body.threshold_micro_cents, body.amount_micro_cents)
    else:
        row = await topups.set_autotopup(uow, access, False, None, None)
    if not row.autotopup_enabled:
        return Response(status_code=204)
    state = schemas.AutoTopup(enabled=True, threshold_micro_cents=row.autotopup_threshold_micro_cents,
                              amount_micro_cents=row.autotopup_amount_micro_cents)
    return JSONResponse(state.model_dump(mode="json", by_alias=True))


@router.get(_ORG + "/ledger", response_model=schemas.Ledger, operation_id="getAILedger")
async def get_ledger(access: MemberAccess, uow: Uow,
                     limit: Annotated[int, Query(ge=1, le=service.LEDGER_PAGE_MAX)] = 50,
                     before: Annotated[int | None, Query(ge=1)] = None) -> JSONResponse:
    return JSONResponse((await service.ledger(uow, access.org, limit=limit, before=before)).body())


async def runtime_chat(request: Request) -> Response:
    """One chat completion of a project's worker, OpenAI's body in and out, streamed over
    server-sent events when it asks (docs/ai.md). A plain route, not FastAPI's: every env.ai call
    comes here, and solving its parameters cost more than the gateway's own work (bench/ai.py)."""
    ctx: AppContext = request.app.state.ctx
    workers.check_runtime_token(ctx, request.headers.get("x-svc-runtime-token"))
    project_id = request.path_params["projectId"]
    if not _PROJECT_ID.fullmatch(project_id):
        raise NotFound("No such project")
    try:
        body = await request.json()
    except ValueError:
        raise BadRequest("The body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("The body is a JSON object: OpenAI's chat completions request")
    if body.get("stream") is True:
        return StreamingResponse(await service.chat_stream(ctx, project_id, body), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
    return JSONResponse(await service.chat(ctx, project_id, body))


_PROJECT_ID = re.compile(RUNTIME_PROJECT_ID)
runtime_router.add_route("/v1/runtime/projects/{projectId}/ai/chat/completions", runtime_chat, methods=["POST"],
                         include_in_schema=False)
