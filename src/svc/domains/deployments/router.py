"""HTTP only: deployments (list, streamed upload, rollback).

These routes do not run in the one-transaction-per-request of `api_router`: the caller, role and
project are resolved on a read session, and a handler that writes opens its own short write
transaction once the work outside the state store is done. So a bundle that takes a minute to
upload never holds the write lock (SQLite has a single writer) or an idle transaction, and the
edge converges after the commit and before the response: the 201 means "live"."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect
from starlette.types import Scope

from svc.context import AppContext
from svc.deps import Ctx, Session
from svc.domains.deployments import artifacts, ingest, service
from svc.domains.deployments.bundle import bad, too_large
from svc.domains.deployments.errors import UnsupportedMediaType
from svc.domains.deployments.provenance import git_provenance
from svc.domains.deployments.schemas import MAX_VERSION, Deployment, DeploymentList, GitInfo, RollbackRequest
from svc.domains.projects.deps import ProjectMember, ProjectViewer
from svc.domains.projects.errors import OperationInFlight
from svc.errors import ServiceUnavailable

log = logging.getLogger("svc.deployments")

IDLE_SECONDS = 120
BUNDLE_TYPES = ("application/gzip", "application/x-gzip", "application/octet-stream")
_UPLOAD_PATH = re.compile(r"/v1/orgs/[^/]+/projects/[^/]+/deployments/?")


def is_bundle_upload(scope: Scope) -> bool:
    """The deploy request, whose body has bounds of its own (exempt from the JSON body cap)."""
    return scope.get("method") == "POST" and _UPLOAD_PATH.fullmatch(scope.get("path", "")) is not None


class OwnTransactionRoute(APIRoute):
    """Dependencies run on a read session; handlers that write use ctx.db.transaction() themselves."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            ctx: AppContext = request.app.state.ctx
            async with ctx.db.transaction(write=False) as session:
                request.state.db_session = session
                return await handler(request)

        return route


router = APIRouter(route_class=OwnTransactionRoute, tags=["deployments"])

_BINARY = {"schema": {"type": "string", "format": "binary"}}
_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_UPLOAD_DOC: dict[str, Any] = {
    "requestBody": {"required": True, "description": "The bundle: a gzipped tar with svc.json at its root",
                    "content": {t: _BINARY for t in BUNDLE_TYPES}},
}


async def _converge(ctx: AppContext) -> None:
    """Make this process's edge serve the committed state before answering. The change is
    committed either way; an edge that cannot converge now catches up on its periodic cycle."""
    if ctx.edge is None:
        return
    try:
        await ctx.edge.converge_now()
    except Exception:
        log.exception("the edge did not converge after a deployment change; its next cycle retries")


async def _body(request: Request) -> AsyncIterator[bytes]:
    """The request body as it arrives; a client that stops sending for IDLE_SECONDS is cut off."""
    chunks = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(IDLE_SECONDS):
                chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        except ClientDisconnect:
            raise bad("truncated", "The upload ended before the body was complete") from None
        except TimeoutError:
            raise bad("truncated", f"The upload stalled: no data for {IDLE_SECONDS} s") from None
        yield chunk


def _check_upload_headers(request: Request, max_bytes: int) -> None:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media not in BUNDLE_TYPES:
        raise UnsupportedMediaType(details={"accepted": list(BUNDLE_TYPES)})
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > max_bytes:
        raise too_large("compressed", max_bytes)


@router.get("/v1/orgs/{orgSlug}/projects/{projectName}/deployments", response_model=DeploymentList,
            operation_id="listDeployments")
async def list_deployments(
    p: ProjectViewer, session: Session,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size")] = 50,
    before: Annotated[int | None, Query(ge=1, le=MAX_VERSION, description="A nextCursor: versions below it")] = None,
) -> DeploymentList:
    views, cursor = await service.list_deployments(session, p.project, limit=limit, before=before)
    return DeploymentList(deployments=views, next_cursor=cursor)


@router.post("/v1/orgs/{orgSlug}/projects/{projectName}/deployments", status_code=201, response_model=Deployment,
             operation_id="createDeployment", openapi_extra=_UPLOAD_DOC,
             responses={413: {"description": "Over a bundle bound (bundle_too_large)", **_ERROR},
                        503: {"description": "The artifact store is not available", **_ERROR}})
async def create_deployment(request: Request, p: ProjectMember, session: Session, ctx: Ctx,
                            git: Annotated[GitInfo, Depends(git_provenance)]) -> Deployment:
    _check_upload_headers(request, ctx.settings.max_bundle_bytes)
    if p.project.state != "active":
        raise OperationInFlight("The project is being deleted")
    uploader = p.access.principal.user.subject
    # Nothing of the state store is held while the body streams in.
    await session.close()
    received = await ingest.receive(ctx, _body(request))
    try:
        try:
            await artifacts.store_artifact(ctx, received.digest, received.bundle, received.staging,
                                           received.unpacked.files)
        except Exception as e:
            log.exception("storing the artifact of %s failed", received.digest)
            raise ServiceUnavailable("The artifact store is not available; try again") from e
        async with ctx.db.transaction() as write:
            row = await service.record_deployment(write, p.access, p.project.name, received, git)
    finally:
        await received.discard()
    await _converge(ctx)
    return service.view(row, live=True, uploader=uploader)


@router.post("/v1/orgs/{orgSlug}/projects/{projectName}/rollback", response_model=Deployment,
             operation_id="rollbackProject")
async def rollback(body: RollbackRequest, p: ProjectMember, session: Session, ctx: Ctx) -> Deployment:
    await session.close()
    async with ctx.db.transaction() as write:
        row = await service.rollback(write, p.access, p.project.name, body.version)
        uploader = await service.uploader_of(write, row)
    await _converge(ctx)
    return service.view(row, live=True, uploader=uploader)
