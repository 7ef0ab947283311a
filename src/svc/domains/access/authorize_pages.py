"""The org login round trip's page on svc: a project whose access mode is `org` sends a visitor
without its cookie to /access/authorize?to=<host>&next=<path> (access.service.login_url). Signed in
to the dashboard, the visitor goes straight back with a one-time code (access.service.authorize,
the use case POST /v1/access/authorize runs); not signed in, they sign in first and come back here.
Someone outside the project's org is told so, with the account they are signed in with."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import Query, Request, Response
from fastapi.responses import RedirectResponse

from svc.auth.principal import resolve_principal
from svc.deps import Ctx, Uow, request_session
from svc.domains.access import errors, service
from svc.kit.hosts import MAX_HOST, normalize_host
from svc.kit.paths import MAX_NEXT, safe_next
from svc.uow import runs
from svc.web import render
from svc.web.routing import page_router
from svc.web.session import session_token

router = page_router()

AUTHORIZE_PATH = "/access/authorize"


@router.get(AUTHORIZE_PATH)
@runs(service.authorize)
async def authorize_page(request: Request, uow: Uow, ctx: Ctx,
                         to: Annotated[str | None, Query(max_length=MAX_HOST)] = None,
                         next: Annotated[str | None, Query(max_length=MAX_NEXT)] = None) -> Response:
    host = normalize_host(to)
    if host is None:
        raise errors.BadHost("The link names no valid project hostname")
    path = safe_next(next)
    if path is None:
        raise errors.BadNext()
    if not await service.is_routed(uow, host):
        raise errors.UnknownHostname(details={"host": host})
    token = session_token(request, ctx.settings)
    principal = await resolve_principal(request_session(request), token) if token else None
    if principal is None or principal.kind != "session":
        here = AUTHORIZE_PATH + "?" + urlencode({"to": host, "next": path})
        return RedirectResponse(f"/signin?next={quote(here, safe='/')}" + ("&ended=1" if token else ""),
                                status_code=303)
    request.state.viewer = principal
    try:
        redirect = await service.authorize(uow, principal, to=host, next_path=path, config=ctx.config)
    except errors.NotOrgMember as err:
        return await render.render(request, "access/authorize_refused.html", status=403, title="Not a member",
                                   host=host, org_slug=(err.details or {}).get("org"))
    return RedirectResponse(redirect, status_code=303, headers={"Cache-Control": "no-store"})
