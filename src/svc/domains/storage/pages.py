"""The project's Storage tab: the grant (members) and revoke (admins), the usage against the plan's
quota, and an object browser: folders by "/", a page at a time, upload (a multipart form streamed
to the store through objects.put), download and delete. The same service calls, role rules and
key rules as the API's (router.py, objects.py).

An upload is bounded before its body is read: its Content-Length must fit the room the project has
left (what the status counts, plus the form's own bytes); objects.put then reserves the file's
exact size against the quota as the API's PUT does. So a page cannot be used to fill svc's disk
with a body the quota would refuse anyway."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Request, Response
from fastapi.responses import StreamingResponse
from starlette.datastructures import UploadFile
from starlette.types import Scope

from svc.auth.projects import ProjectAccess
from svc.auth.roles import at_least
from svc.deps import Uow
from svc.domains.storage import errors, objects, service
from svc.errors import BadRequest
from svc.models import Role
from svc.uow import runs
from svc.web import render
from svc.web.deps import ProjectAdmin, ProjectMember, ProjectViewer
from svc.web.forms import fields
from svc.web.routing import page_router
from svc.web.session import CSRF_HEADER

router = page_router()

PAGE = "/orgs/{orgSlug}/projects/{projectName}/storage"
ROWS = 50  # objects and folders a page of the browser shows
CHUNK = 64 * 1024
FORM_BYTES = 64 * 1024  # what a multipart form adds to its file: boundaries, headers, the other fields
_UPLOAD = re.compile(r"/orgs/[^/]+/projects/[^/]+/storage/upload")


def is_upload(scope: Scope) -> bool:
    """The browser's upload (htmx, which sends the CSRF token as a header): its body is bounded by
    the page itself against the project's room, not by the JSON body cap. A form posted without
    script has its CSRF field read from the body before any page code runs, so it stays under the
    cap (1 MiB)."""
    if scope.get("method") != "POST" or not _UPLOAD.fullmatch(scope.get("path", "")):
        return False
    return any(name == CSRF_HEADER.encode() for name, _ in scope.get("headers", []))


def _url(p: ProjectAccess) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/storage"


def _folder_url(base: str, prefix: str, cursor: str | None = None) -> str:
    query = {k: v for k, v in (("prefix", prefix), ("cursor", cursor)) if v}
    return f"{base}?{urlencode(query)}" if query else base


def size(n: int | None) -> str:
    """Bytes for a person: 512 bytes, 14.2 KiB, 1.0 GiB (powers of 1024, as the quotas are set)."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _crumbs(base: str, prefix: str) -> list[tuple[str, str]]:
    """(name, address) of each folder from the top down to `prefix`."""
    crumbs = [("All objects", base)]
    parts = prefix.split("/")[:-1]  # a prefix ending in "/" is a folder; a partial name is not one
    for i, part in enumerate(parts):
        crumbs.append((part + "/", _folder_url(base, "/".join(parts[: i + 1]) + "/")))
    return crumbs


@router.get(PAGE)
async def storage_page(request: Request, p: ProjectViewer, uow: Uow) -> Response:
    prefix = request.query_params.get("prefix", "")
    cursor = request.query_params.get("cursor") or None
    base = _url(p)
    try:
        status = await service.status(uow, p.access.org, p.project)
    except errors.StorageUnavailable:  # said in words on the page, with what the operator does
        return await render.render(request, "storage/project.html", title=f"{p.project.name}: Storage",
                                   project=p.project.name, storage=None, unavailable=service.unavailable(uow.ctx))
    listing = None
    if status.granted:
        await uow.close_reads()  # the store is asked with nothing of svc's held
        listing = await objects.list(uow.ctx, p.project.id, prefix=prefix, cursor=cursor, limit=ROWS, delimiter="/")
    rows: list[dict[str, Any]] = []
    if listing is not None:
        rows += [{"folder": True, "name": f[len(prefix):], "url": _folder_url(base, f)} for f in listing.prefixes]
        rows += [{"folder": False, "name": o.key[len(prefix):], "key": o.key, "size": size(o.size),
                  "uploaded": o.uploaded, "type": o.content_type or "",
                  "download": f"{base}/download?{urlencode({'key': o.key})}"} for o in listing.objects]
    quota, used = status.quota_bytes, status.used_bytes
    return await render.render(
        request, "storage/project.html", title=f"{p.project.name}: Storage", project=p.project.name,
        storage=status, quota=size(quota), used=size(used), share=min(100.0, 100 * used / quota) if quota else 0.0,
        full=used >= quota, member=at_least(p.access.role, Role.member), admin=at_least(p.access.role, Role.admin),
        page_url=base, prefix=prefix, crumbs=_crumbs(base, prefix), rows=rows, cursor=cursor,
        more=_folder_url(base, prefix, listing.cursor) if listing is not None and listing.cursor else None,
        first=_folder_url(base, prefix) if cursor else None)


@router.post(PAGE)
@runs(service.grant)
async def grant(request: Request, p: ProjectMember, uow: Uow) -> Response:
    await service.grant(uow, p.access, p.project)
    return render.redirect(request, _url(p), flash="Storage granted: the worker gets env.storage on its next request.")


@router.post(PAGE + "/revoke")
@runs(service.revoke)
async def revoke(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return render.redirect(request, _url(p), flash="Storage revoked: the worker no longer has env.storage. "
                                                   "The objects are kept.")


async def _file_chunks(upload: UploadFile) -> AsyncIterator[bytes]:
    while chunk := await upload.read(CHUNK):
        yield chunk


@router.post(PAGE + "/upload")
@runs(service.upload)  # the store's writes are objects.put's own: nothing held while the body streams
async def upload(request: Request, p: ProjectMember, uow: Uow) -> Response:
    length = request.headers.get("content-length", "")
    if not length.isdigit() or len(length) > 19:
        raise errors.LengthRequired()
    status = await service.status(uow, p.access.org, p.project)
    if not status.granted:
        raise errors.NotGranted()
    if int(length) > max(0, status.quota_bytes - status.used_bytes) + FORM_BYTES:
        raise errors.QuotaExceeded(
            f"This upload of {size(int(length))} would pass the project's storage quota of "
            f"{size(status.quota_bytes)}: it uses {size(status.used_bytes)}",
            details={"quotaBytes": status.quota_bytes, "usedBytes": status.used_bytes, "lengthBytes": int(length)})
    await uow.close_reads()
    form = await request.form(max_files=1, max_fields=5)
    try:
        given = form.get("file")
        if not isinstance(given, UploadFile) or not given.filename:
            raise BadRequest("Choose a file to upload")
        folder = form.get("prefix")
        name = form.get("name")
        prefix = folder if isinstance(folder, str) else ""
        key = prefix + (name.strip() if isinstance(name, str) and name.strip() else given.filename)
        info = await service.upload(uow, p.project, key, _file_chunks(given), length=given.size or 0,
                                    content_type=given.content_type or None)
    finally:
        await form.close()
    return render.redirect(request, _folder_url(_url(p), prefix),
                           flash=f"Uploaded {info.key[len(prefix):]} ({size(info.size)}).")


@router.get(PAGE + "/download")
async def download(request: Request, p: ProjectViewer, uow: Uow) -> Response:
    key = request.query_params.get("key", "")
    await uow.close_reads()
    body = await objects.get(uow.ctx, p.project.id, key)
    name = key.rsplit("/", 1)[-1] or "object"
    headers = {"content-length": str(body.length), "etag": body.info.etag,
               "content-disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}"}
    return StreamingResponse(objects.chunks_of(body), media_type=body.info.content_type or "application/octet-stream",
                             headers=headers)


@router.post(PAGE + "/delete")
@runs(service.remove)
async def delete(request: Request, p: ProjectMember, uow: Uow) -> Response:
    key = (await fields(request)).get("key", "")
    await service.remove(uow, p.project, key)  # the key checked there, as the API's DELETE
    folder = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
    return render.redirect(request, _folder_url(_url(p), folder), flash=f"Deleted {key}.")
