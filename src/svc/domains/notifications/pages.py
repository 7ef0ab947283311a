"""An org's notifications (limit events and the like, for every member), as /v1/orgs/{org}/notifications."""

from __future__ import annotations

from fastapi import Request, Response

from svc.deps import Uow
from svc.domains.notifications import service
from svc.web import render
from svc.web.deps import OrgViewer
from svc.web.routing import page_router

router = page_router()

SHOWN = 50


@router.get("/orgs/{orgSlug}/notifications")
async def notifications_page(request: Request, access: OrgViewer, uow: Uow) -> Response:
    rows = await service.latest(uow, access.org.id, SHOWN)
    return await render.render(request, "notifications/list.html", title="Notifications", rows=rows,
                               shown=SHOWN)
