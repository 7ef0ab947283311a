"""The project's Email tab: its address and sender, the plan's cap and the day's counts, the grant
(members) and revoke (admins), the mail domain's DNS records to publish when svc does not serve its
zone, the mail log with its direction filter and pages, one message, and its raw download. The
same service calls and role rules as the API's (router.py); the log's filters are the API's query
parameters, read through the API's own model."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import Request, Response
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from svc.auth.projects import ProjectAccess
from svc.auth.roles import at_least
from svc.deps import Uow
from svc.domains.email import errors, records, schemas, service
from svc.models import Role
from svc.uow import runs
from svc.web import render
from svc.web.deps import ProjectAdmin, ProjectMember, ProjectViewer
from svc.web.forms import parse
from svc.web.routing import page_router

router = page_router()

PAGE = "/orgs/{orgSlug}/projects/{projectName}/email"
LOG_ROWS = 25


def _url(p: ProjectAccess) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/email"


@router.get(PAGE)
@runs(records.view)  # as GET .../email/records: the mail domain's DKIM key is made at its first look
async def email_page(request: Request, p: ProjectViewer, uow: Uow) -> Response:
    given = {k: v for k, v in request.query_params.items() if k in ("direction", "cursor") and v != ""}
    query = parse(schemas.MailLogQuery, {"limit": LOG_ROWS} | given)
    try:
        status: schemas.EmailStatus | None = await service.status(uow, p.access.org, p.project)
    except errors.EmailNotConfigured:
        status = None  # no mail domain: said in words on the page, the log (if any) still shown
    # The records to publish where the mail domain's DNS is served (or the zone svc publishes them in).
    dns = await records.view(uow) if status is not None else None
    log = await service.log(uow, p.project, query)
    base = _url(p)
    kept = {"direction": query.direction} if query.direction else {}
    older = f"{base}?{urlencode({**kept, 'cursor': log.next_cursor})}" if log.next_cursor else None
    newest = (f"{base}?{urlencode(kept)}" if kept else base) if query.cursor else None
    return await render.render(request, "email/project.html", title=f"{p.project.name}: Email",
                               project=p.project.name, email=status, unavailable=service.unavailable(uow.ctx),
                               member=at_least(p.access.role, Role.member), admin=at_least(p.access.role, Role.admin),
                               page_url=base, records=dns, log=log, query=query, older=older, newest=newest)


@router.post(PAGE)
@runs(service.grant)
async def grant(request: Request, p: ProjectMember, uow: Uow) -> Response:
    status = await service.grant(uow, p.access, p.project)
    return render.redirect(request, _url(p), flash=f"Email granted: the project receives mail at @{status.address}.")


@router.post(PAGE + "/revoke")
@runs(service.revoke)
async def revoke(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return render.redirect(request, _url(p), flash="Email revoked: mail to the project's address is refused. "
                                                   "Its log is kept.")


@router.get(PAGE + "/log/{mailId}")
async def message_page(request: Request, p: ProjectViewer, uow: Uow, mailId: str) -> Response:
    entry = await service.entry(uow, p.project, mailId)
    values: dict[str, Any] = {"project": p.project.name, "entry": entry, "page_url": _url(p)}
    return await render.render(request, "email/message.html", title=f"{p.project.name}: {entry.subject or entry.id}",
                               **values)


@router.get(PAGE + "/log/{mailId}/raw")
async def raw_download(p: ProjectViewer, uow: Uow, mailId: str) -> FileResponse:
    path = await service.raw_message(uow, p.project, mailId)
    return FileResponse(path, media_type="message/rfc822", filename=f"{mailId}.eml",
                        background=BackgroundTask(path.unlink, missing_ok=True))
