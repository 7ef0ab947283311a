"""HTTP only: a project's database (spec "Database"), and the route env.db calls (the runtime's)."""

from __future__ import annotations

import contextlib
import json
from typing import Annotated, Any

from fastapi import Header, Path, Response, WebSocket, WebSocketDisconnect

from svc.adapters.database.port import DatabaseNodeError
from svc.auth.projects import ProjectAdmin, ProjectMember, ProjectViewer
from svc.deps import Ctx, Uow, api_router
from svc.domains.databases import operations, schemas, service
from svc.domains.operations.schemas import OperationStarted
from svc.domains.workers import service as workers
from svc.domains.workers.schemas import RUNTIME_PROJECT_ID
from svc.errors import AppError, envelope
from svc.uow import runs

_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
# Every database route that reaches the node may answer 503 (no_node_admin: databases are off on
# this server; no_home_node: the node did not answer). The document lists 400-409 for every route.
router = api_router(tags=["database"], responses={503: {
    "description": "Project databases are off here (no_node_admin) or the node did not answer (no_home_node)",
    **_ERROR}})
runtime_router = api_router(include_in_schema=False)

_BASE = "/v1/orgs/{orgSlug}/projects/{projectName}/database"
TokenUserPath = Annotated[str, Path(alias="tokenUser", max_length=63)]
OpIdPath = Annotated[str, Path(alias="opId", max_length=64)]


@router.get(_BASE, response_model=schemas.DatabaseState, operation_id="getDatabase")
async def get_database(p: ProjectViewer, uow: Uow) -> schemas.DatabaseState:
    return schemas.DatabaseState(db=await service.has_database(uow, p.project))


@router.post(_BASE, response_model=schemas.DatabaseConnect, operation_id="createDatabase")
@runs(service.create_database)
async def create_database(p: ProjectMember, uow: Uow) -> Response:
    return _no_store(await service.create_database(uow, p.access, p.project))


@router.get(_BASE + "/connect", response_model=schemas.DatabaseConnect, operation_id="connectDatabase")
@runs(service.connect)
async def connect(p: ProjectMember, uow: Uow) -> Response:
    found = await service.connect(uow, p.project)
    return _no_store(found)


@router.get(_BASE + "/endpoint", response_model=schemas.DatabaseEndpointView, operation_id="getDatabaseEndpoint")
async def endpoint(p: ProjectViewer, ctx: Ctx) -> schemas.DatabaseEndpointView:
    return service.endpoint(ctx, p.project)


@router.get(_BASE + "/tokens", response_model=schemas.TokenList, operation_id="listDatabaseTokens")
async def list_tokens(p: ProjectMember, uow: Uow) -> schemas.TokenList:
    return schemas.TokenList(tokens=[schemas.TokenMeta.model_validate(t)
                                     for t in await service.list_tokens(uow, p.project)])


@router.post(_BASE + "/tokens", status_code=201, response_model=schemas.DatabaseToken,
             operation_id="createDatabaseToken")
@runs(service.create_token)
async def create_token(p: ProjectMember, uow: Uow, body: schemas.TokenCreate | None = None) -> Response:
    made = await service.create_token(uow, p.access, p.project, body or schemas.TokenCreate())
    return _no_store(made, status=201)


@router.delete(_BASE + "/tokens/{tokenUser}", status_code=204, response_class=Response,
               operation_id="deleteDatabaseToken")
@runs(service.delete_token)
async def delete_token(user: TokenUserPath, p: ProjectMember, uow: Uow) -> Response:
    await service.delete_token(uow, p.access, p.project, user)
    return Response(status_code=204)


@router.post(_BASE + "/export", response_model=schemas.DatabaseExport, operation_id="exportDatabase",
             responses={502: {"description": "The node could not make the image (export_failed)", **_ERROR}})
@runs(service.export)
async def export(p: ProjectMember, uow: Uow) -> schemas.DatabaseExport:
    return await service.export(uow, p.access, p.project)


@router.get(_BASE + "/generations", response_model=schemas.Generations, operation_id="listDatabaseGenerations")
@runs(service.list_generations)
async def list_generations(p: ProjectMember, uow: Uow) -> schemas.Generations:
    return await service.list_generations(uow, p.project)


@router.post(_BASE + "/generations", status_code=202, response_model=OperationStarted,
             operation_id="backUpDatabase", responses={409: {
                 "description": "An operation already runs on the project's database (operation_in_progress)",
                 **_ERROR}})
@runs(operations.start_backup)
async def back_up(p: ProjectMember, uow: Uow) -> OperationStarted:
    """Back up now (svc's extension of the generations): a generation taken now and proven by a
    scratch restore, as the scheduled ones; follow it at operations/{opId}. One at a time per
    project (409 operation_in_progress)."""
    return OperationStarted(operation_id=(await operations.start_backup(uow, p.access, p.project)).id)


@router.post(_BASE + "/restore", status_code=202, response_model=OperationStarted, operation_id="restoreDatabase")
@runs(operations.start_restore)
async def restore(body: schemas.RestoreRequest, p: ProjectAdmin, uow: Uow) -> OperationStarted:
    return OperationStarted(operation_id=(await operations.start_restore(uow, p.access, p.project, body)).id)


@router.post(_BASE + "/delete", status_code=202, response_model=OperationStarted, operation_id="deleteDatabase")
@runs(operations.start_delete)
async def delete(body: schemas.DeleteRequest, p: ProjectAdmin, uow: Uow) -> OperationStarted:
    return OperationStarted(operation_id=(await operations.start_delete(uow, p.access, p.project, body)).id)


@router.get(_BASE + "/operations/{opId}", response_model=schemas.DatabaseOperation,
            operation_id="getDatabaseOperation")
async def get_operation(op_id: OpIdPath, p: ProjectMember, uow: Uow) -> schemas.DatabaseOperation:
    return schemas.DatabaseOperation.of(await operations.get(uow, p.project, op_id))


@router.post(_BASE + "/operations/{opId}/abort", response_model=schemas.DatabaseOperation,
             operation_id="abortDatabaseOperation")
@runs(operations.abort)
async def abort(op_id: OpIdPath, p: ProjectAdmin, uow: Uow) -> schemas.DatabaseOperation:
    return schemas.DatabaseOperation.of(await operations.abort(uow, p.access, p.project, op_id))


def _no_store(body: Any, status: int = 200) -> Response:
    """A body with a password: never kept by a cache between."""
    return Response(body.model_dump_json(by_alias=True), status_code=status, media_type="application/json",
                    headers={"Cache-Control": "no-store"})


@runtime_router.post("/v1/runtime/projects/{projectId}/db")
@runs(service.run_query)
async def runtime_query(body: schemas.RuntimeQuery, uow: Uow, ctx: Ctx,
                        project_id: str = Path(alias="projectId", pattern=RUNTIME_PROJECT_ID),
                        token: str | None = Header(default=None, alias="X-Svc-Runtime-Token")) -> dict[str, Any]:
    workers.check_runtime_token(ctx, token)
    return await service.run_query(uow, project_id, body)


@router.websocket(_BASE + "/proxy")
async def proxy(websocket: WebSocket, org_slug: str = Path(alias="orgSlug", max_length=64),
                project_name: str = Path(alias="projectName", max_length=64)) -> None:
    """The port-forward path (`svc db proxy`): one PostgreSQL client connection per WebSocket,
    binary frames both ways. A refusal is one text frame, the Error envelope, then the close."""
    ctx = websocket.app.state.ctx
    header = websocket.headers.get("authorization", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else None
    await websocket.accept()
    try:
        node, project_id, password = await service.tunnel_target(ctx, token, org_slug, project_name)
    except AppError as err:
        await websocket.send_text(json.dumps(envelope(err.code, err.message, err.details)))
        await websocket.close(code=1008)
        return

    async def receive() -> bytes:
        message = await websocket.receive()
        return b"" if message["type"] == "websocket.disconnect" else message.get("bytes") or b""

    try:
        await node.tunnel(project_id, password, receive, websocket.send_bytes)
    except DatabaseNodeError as exc:
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.send_text(json.dumps(envelope("no_home_node", str(exc), None)))
    finally:
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.close()
