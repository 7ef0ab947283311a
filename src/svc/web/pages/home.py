"""`/`: the dashboard's front door (the signed-in person's first org, or sign-in), the org switcher's
target, (`/docs`, the API reference, is svc/openapi.py's). A client that asks `/` for JSON (Accept: application/json,
without text/html) gets what answers here: {service, name, version, api, docs, openapi}."""

from __future__ import annotations

import re

from fastapi import Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from svc import __version__
from svc.auth.principal import resolve_principal
from svc.deps import Ctx, Uow, request_session
from svc.domains.orgs import service as orgs
from svc.kit.names import SLUG_PATTERN
from svc.kit.pages import wants_html
from svc.openapi import DOCS_URL
from svc.web.deps import SignedIn
from svc.web.routing import page_router
from svc.web.session import session_token

router = page_router()


@router.get("/")
async def home(request: Request, uow: Uow, ctx: Ctx) -> Response:
    settings = ctx.settings
    if not wants_html(request):
        return JSONResponse({"service": "svc", "name": settings.service_name, "version": __version__,
                             "api": f"{settings.public_url}/v1", "docs": DOCS_URL, "openapi": "/v1/openapi.json"},
                            headers={"Cache-Control": "no-cache"})
    token = session_token(request, settings)
    principal = await resolve_principal(request_session(request), token) if token else None
    if principal is None or principal.kind != "session":
        return RedirectResponse("/signin" + ("?ended=1" if token else ""), status_code=303)
    memberships = await orgs.memberships_of(uow, principal.user, settings)
    first = next((m for m in memberships if m.personal), memberships[0] if memberships else None)
    return RedirectResponse(f"/orgs/{first.slug}/projects" if first else "/orgs/new", status_code=303)


@router.get("/switch")
async def switch(principal: SignedIn, org: str = "") -> Response:
    """The org switcher's form (a GET, so it works without script)."""
    if not 3 <= len(org) <= 32 or re.match(SLUG_PATTERN, org) is None:
        return RedirectResponse("/", status_code=303)
    return RedirectResponse(f"/orgs/{org}/projects", status_code=303)

