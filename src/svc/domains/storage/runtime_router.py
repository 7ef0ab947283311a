"""HTTP only: what a project's worker's env.storage calls (the runtime's Storage entrypoint,
adapters/workers/dispatcher.js), proved by the runtime's token (X-Svc-Runtime-Token, which
workerd adds to each request it sends svc; a visitor's request never carries it here: the edge
sends /__svc/ to the API's /v1/edge/ only). The project is the one svc named in the binding's
props; the key is the project's own (objects.py puts it under the project's prefix). Not for API
clients: left out of the OpenAPI document. The key is a query parameter, not a path: a URL's
path has its `..` segments resolved on the way, a query string is carried as it is.

- PUT  /v1/runtime/projects/{projectId}/storage/object?key=: put(), the body streamed (its
  Content-Length required: the quota is held for it before the first byte is read)
- GET  /v1/runtime/projects/{projectId}/storage/object?key=[&offset=&length= | &suffix=]: get(),
  the bytes streamed (206 for a range, R2's terms), the object's JSON in X-Svc-Object
- POST /v1/runtime/projects/{projectId}/storage/head: head() {key} -> {object: ... | null}
- POST /v1/runtime/projects/{projectId}/storage/list: list() {prefix, cursor, limit, delimiter}
- POST /v1/runtime/projects/{projectId}/storage/delete: delete() {keys: [...]}"""

from __future__ import annotations

import json
import re
from datetime import UTC
from email.utils import format_datetime

from fastapi import Header, Path, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import Scope

from svc.deps import Ctx, api_router
from svc.domains.storage import errors, objects, runtime
from svc.domains.workers import service as workers
from svc.domains.workers.schemas import RUNTIME_PROJECT_ID
from svc.errors import BadRequest

router = api_router(include_in_schema=False)

_P = "/v1/runtime/projects/{projectId}/storage"
# A key's bound is objects.py's (1024 bytes of UTF-8); this one only keeps a query string short.
_KEY = Query(max_length=4096)
_PROJECT = Path(alias="projectId", pattern=RUNTIME_PROJECT_ID)
_TOKEN = Header(default=None, alias="X-Svc-Runtime-Token")
_UPLOAD_PATH = re.compile(r"/v1/runtime/projects/[^/]+/storage/object")


def is_upload(scope: Scope) -> bool:
    """put()'s body, which the quota bounds (exempt from the API's JSON body cap)."""
    return scope.get("method") == "PUT" and _UPLOAD_PATH.fullmatch(scope.get("path", "")) is not None


@router.put(_P + "/object")
async def runtime_put(request: Request, ctx: Ctx, key: str = _KEY, project_id: str = _PROJECT,
                      token: str | None = _TOKEN) -> JSONResponse:
    workers.check_runtime_token(ctx, token)
    declared = request.headers.get("content-length")
    if declared is None:
        raise errors.LengthRequired()
    if not declared.isdigit() or len(declared) > 19:
        raise BadRequest("Content-Length is not a number of bytes")
    info = await objects.put(ctx, project_id, key, request.stream(), length=int(declared),
                             content_type=request.headers.get("content-type"))
    return JSONResponse(runtime.object_view(info))


@router.get(_P + "/object")
async def runtime_get(ctx: Ctx, key: str = _KEY, project_id: str = _PROJECT, token: str | None = _TOKEN,
                      offset: int | None = Query(default=None, ge=0),
                      length: int | None = Query(default=None, ge=1),
                      suffix: int | None = Query(default=None, ge=1)) -> StreamingResponse:
    workers.check_runtime_token(ctx, token)
    start, end = runtime.byte_range(offset, length, suffix)
    body = await objects.get(ctx, project_id, key, start=start, end=end)
    info = body.info
    headers = {"content-length": str(body.length), "etag": info.etag,
               # (S3's times come as dateutil's UTC, which format_datetime does not take for GMT.)
               "last-modified": format_datetime(info.uploaded.astimezone(UTC), usegmt=True),
               # ASCII (a key may be any UTF-8): what the wrapper makes its R2Object of.
               "x-svc-object": json.dumps(runtime.object_view(info))}
    ranged = start is not None or end is not None
    if ranged:
        headers["content-range"] = f"bytes {body.start}-{body.end}/{info.size}"
    return StreamingResponse(objects.chunks_of(body), status_code=206 if ranged else 200, headers=headers,
                             media_type=info.content_type or "application/octet-stream")


@router.post(_P + "/head")
async def runtime_head(body: runtime.HeadRequest, ctx: Ctx, project_id: str = _PROJECT,
                       token: str | None = _TOKEN) -> JSONResponse:
    workers.check_runtime_token(ctx, token)
    info = await objects.head(ctx, project_id, body.key)
    return JSONResponse({"object": runtime.object_view(info) if info is not None else None})


@router.post(_P + "/list")
async def runtime_list(body: runtime.ListRequest, ctx: Ctx, project_id: str = _PROJECT,
                       token: str | None = _TOKEN) -> JSONResponse:
    workers.check_runtime_token(ctx, token)
    listing = await objects.list(ctx, project_id, prefix=body.prefix, cursor=body.cursor, limit=body.limit,
                                 delimiter=body.delimiter)
    return JSONResponse(runtime.listing_view(listing))


@router.post(_P + "/delete")
async def runtime_delete(body: runtime.DeleteRequest, ctx: Ctx, project_id: str = _PROJECT,
                         token: str | None = _TOKEN) -> JSONResponse:
    workers.check_runtime_token(ctx, token)
    # Every key checked before any is deleted: a bad one among many changes nothing.
    for key in body.keys:
        objects.check_key(key, project_id)
    for key in body.keys:
        await objects.delete(ctx, project_id, key)
    return JSONResponse({"deleted": len(body.keys)})
