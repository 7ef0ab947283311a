"""HTTP only: a project's storage grant (spec "Object storage") and its objects (STORAGE.md's
routes: the bytes streamed both ways, never whole in memory)."""

from __future__ import annotations

import re
from datetime import UTC
from email.utils import format_datetime
from typing import Annotated, Any

from fastapi import Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.types import Scope

from svc.adapters.objects.port import ObjectInfo
from svc.auth.projects import ProjectAdmin, ProjectMember, ProjectViewer
from svc.deps import Uow, api_router
from svc.domains.storage import errors, objects, schemas, service
from svc.errors import BadRequest
from svc.uow import runs

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {"description": "No object store on this svc (storage_unavailable)", "content": _ERROR}}
_NOT_GRANTED: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such project, or it is not granted storage (not_granted), or no such object (not_found)",
          "content": _ERROR}, **_UNAVAILABLE}
router = api_router(tags=["storage"])

_S = "/v1/orgs/{orgSlug}/projects/{projectName}/storage"
_O = _S + "/objects"
_UPLOAD_PATH = re.compile(r"/v1/orgs/[^/]+/projects/[^/]+/storage/objects/.*", re.DOTALL)


def is_object_upload(scope: Scope) -> bool:
    """An object's upload, whose size the quota bounds (exempt from the API's JSON body cap)."""
    return scope.get("method") == "PUT" and _UPLOAD_PATH.fullmatch(scope.get("path", "")) is not None


@router.get(_S, response_model=schemas.StorageStatus, operation_id="getStorage", responses=_UNAVAILABLE,
            summary="Whether the project is granted storage, its prefix, its plan's quota and what it uses")
async def get_storage(p: ProjectViewer, uow: Uow) -> schemas.StorageStatus:
    return await service.status(uow, p.access.org, p.project)


@router.post(_S, response_model=schemas.StorageStatus, operation_id="grantStorage", responses=_UNAVAILABLE,
             summary="Give the project object storage under its fixed prefix (env.storage); idempotent, no body")
@runs(service.grant)
async def grant_storage(p: ProjectMember, uow: Uow) -> schemas.StorageStatus:
    return await service.grant(uow, p.access, p.project)


@router.delete(_S, status_code=204, operation_id="revokeStorage", responses=_UNAVAILABLE,
               summary="Take object storage away; the objects are kept; idempotent")
@runs(service.revoke)
async def revoke_storage(p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return Response(status_code=204)


@router.get(_O, response_model=schemas.ObjectList, operation_id="listObjects", responses=_NOT_GRANTED,
            summary="The project's objects in key order, a page at a time")
async def list_objects(
    p: ProjectViewer, uow: Uow,
    prefix: Annotated[str, Query(max_length=1024, description="Only keys starting with this")] = "",
    delimiter: Annotated[str | None, Query(max_length=16, description="Group keys ending at it below the prefix "
                                                                      "(prefixes)")] = None,
    cursor: Annotated[str | None, Query(max_length=2048, description="A nextCursor")] = None,
    limit: Annotated[int, Query(ge=1, le=schemas.MAX_LIST, description="Page size")] = schemas.MAX_LIST,
) -> schemas.ObjectList:
    await uow.close_reads()
    listed = await objects.list(uow.ctx, p.project.id, prefix=prefix, cursor=cursor, limit=limit,
                                delimiter=delimiter)
    return schemas.ObjectList(objects=[_view(o) for o in listed.objects], prefixes=listed.prefixes,
                              next_cursor=listed.cursor)


@router.put(_O + "/{key:path}", response_model=schemas.ObjectView, operation_id="putObject",
            openapi_extra={"requestBody": {"required": True, "content": {"*/*": {"schema": {
                "type": "string", "format": "binary"}}}}},
            responses={411: {"description": "No Content-Length (length_required)", "content": _ERROR},
                       413: {"description": "Over the project's quota (storage_quota_exceeded)", "content": _ERROR},
                       **_NOT_GRANTED},
            summary="Store the raw body under the key (streamed; Content-Length required, Content-Type kept)")
@runs(service.upload)
async def put_object(request: Request, p: ProjectMember, uow: Uow, key: str) -> schemas.ObjectView:
    declared = request.headers.get("content-length")
    if declared is None:
        raise errors.LengthRequired()
    if not declared.isdigit() or len(declared) > 19:
        raise BadRequest("Content-Length is not a number of bytes")
    info = await service.upload(uow, p.project, key, request.stream(), length=int(declared),
                                content_type=request.headers.get("content-type"))
    return _view(info)


@router.get(_O + "/{key:path}", operation_id="getObject", response_class=StreamingResponse,
            responses={200: {"content": {"application/octet-stream": {}}},
                       206: {"description": "The range asked for (Range: bytes=a-b)"},
                       416: {"description": "The range starts past the end (range_not_satisfiable)",
                             "content": _ERROR}, **_NOT_GRANTED},
            summary="The object's bytes, streamed; a Range of bytes gives 206")
async def get_object(request: Request, p: ProjectViewer, uow: Uow, key: str) -> Response:
    await uow.close_reads()
    asked = _range(request.headers.get("range"))
    start, end = asked if asked is not None else (None, None)
    body = await objects.get(uow.ctx, p.project.id, key, start=start, end=end)
    headers = _headers(body.info)
    headers["content-length"] = str(body.length)
    status = 200
    if asked is not None:
        status = 206
        headers["content-range"] = f"bytes {body.start}-{body.end}/{body.info.size}"
    return StreamingResponse(objects.chunks_of(body), status_code=status, headers=headers,
                             media_type=body.info.content_type or "application/octet-stream")


# Not in the document: HEAD is GET without its body (RFC 9110), and so is its 404 (no Error envelope).
@router.head(_O + "/{key:path}", include_in_schema=False)
async def head_object(p: ProjectViewer, uow: Uow, key: str) -> Response:
    await uow.close_reads()
    info = await objects.head(uow.ctx, p.project.id, key)
    if info is None:
        raise errors.ObjectNotFound()
    headers = _headers(info)
    headers["content-length"] = str(info.size)
    return Response(status_code=200, headers=headers, media_type=info.content_type or "application/octet-stream")


@router.delete(_O + "/{key:path}", status_code=204, operation_id="deleteObject", responses=_NOT_GRANTED,
               summary="Delete the object; idempotent (204 when there was none)")
@runs(service.remove)
async def delete_object(p: ProjectMember, uow: Uow, key: str) -> Response:
    await service.remove(uow, p.project, key)
    return Response(status_code=204)


def _view(info: ObjectInfo) -> schemas.ObjectView:
    return schemas.ObjectView(key=info.key, size=info.size, etag=info.etag, uploaded_at=info.uploaded,
                              content_type=info.content_type)


def _headers(info: ObjectInfo) -> dict[str, str]:
    return {"etag": info.etag, "last-modified": format_datetime(info.uploaded.astimezone(UTC), usegmt=True),
            "accept-ranges": "bytes"}


_RANGE = re.compile(r"bytes=(\d{0,19})-(\d{0,19})")


def _range(header: str | None) -> tuple[int | None, int | None] | None:
    """One range of bytes (`a-b`, `a-`, `-n`), as objects.get takes it; None: the whole object
    (no header, several ranges, or one that is not well formed: RFC 9110 has those ignored)."""
    if not header:
        return None
    found = _RANGE.fullmatch(header.strip())
    if found is None:
        return None
    first, last = found.group(1), found.group(2)
    if first == "":
        # A suffix of the last n bytes (n = 0: never satisfiable, a 416 as RFC 9110 has it).
        return (None, int(last)) if last else None
    if last == "":
        return int(first), None
    if int(last) < int(first):
        return None
    return int(first), int(last)
