"""HTTP only: the endpoints the worker runtime calls (adapters/workers/dispatcher.js), proved by
the runtime's token (X-Svc-Runtime-Token, which workerd adds to each request it sends svc). Not
for API clients, so they are left out of the OpenAPI document.

- GET /v1/runtime/workers/{key}: a live deployment's worker and its env (secrets in clear: only
  the runtime may ask, over loopback).
- POST /v1/runtime/projects/{projectId}/logs: what a project's worker printed or threw."""

from __future__ import annotations

from fastapi import Header, Path, Response
from fastapi.responses import JSONResponse

from svc.deps import Ctx, Uow, api_router
from svc.domains.workers import schemas, service
from svc.domains.workers.schemas import RUNTIME_PROJECT_ID
from svc.uow import runs

router = api_router(include_in_schema=False)

KEY = r"^[A-Za-z0-9_.:-]{1,200}$"


@router.get("/v1/runtime/workers/{key}")
@runs(service.runtime_worker)
async def runtime_worker(uow: Uow, ctx: Ctx, key: str = Path(pattern=KEY),
                         token: str | None = Header(default=None, alias="X-Svc-Runtime-Token")) -> Response:
    service.check_runtime_token(ctx, token)
    worker = await service.runtime_worker(uow, key)
    # Secrets in clear: never stored by anything between (no proxy sits here, but say so anyway).
    return JSONResponse(worker.model_dump(by_alias=True), headers={"Cache-Control": "no-store"})


@router.post("/v1/runtime/projects/{projectId}/logs", status_code=204)
@runs(service.record_runtime_logs)
async def runtime_logs(body: schemas.RuntimeLogLines, uow: Uow, ctx: Ctx,
                       project_id: str = Path(alias="projectId", pattern=RUNTIME_PROJECT_ID),
                       token: str | None = Header(default=None, alias="X-Svc-Runtime-Token")) -> Response:
    service.check_runtime_token(ctx, token)
    await service.record_runtime_logs(uow, project_id, body)
    return Response(status_code=204)
