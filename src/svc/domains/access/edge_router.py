"""HTTP only: the endpoints the edge (nginx) calls, per docs/edge.md. Not for API clients, so they
are left out of the OpenAPI document.

- GET /v1/edge/check: the auth_request subrequest of protected hosts: 204 or 401 + X-Svc-Login.
- GET/POST /v1/edge/password (the host's /__svc/password): the password form and its sign-in.
- GET /v1/edge/callback (the host's /__svc/callback): one-time code -> cookie, then back to the path.

The host the browser used arrives in X-Svc-Host (set by nginx). The password sign-in only reads
(Tx.READ), and holds nothing while argon2 runs."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from svc.deps import Ctx, Uow, api_router
from svc.domains.access import cookies, errors, host_pages, service
from svc.kit.pages import edge_host, error_page, wants_html
from svc.kit.paths import safe_next
from svc.uow import runs

router = api_router(include_in_schema=False)

MAX_FORM = 8 * 1024
# svc_access values looked at: more than nginx's 8 KiB header buffer can carry at 1 KiB a cookie,
# so the real one is never cut off by ones a sibling host planted.
MAX_ACCESS_COOKIES = 16
NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _access_cookies(request: Request) -> list[str]:
    """Every svc_access value in the Cookie header (a sibling host may have planted others, with
    longer paths so that browsers send them first)."""
    values: list[str] = []
    for part in request.headers.get("cookie", "").split(";"):
        name, eq, value = part.strip().partition("=")
        if eq and name == cookies.COOKIE_NAME and value:
            values.append(value.strip('"'))
    return values[:MAX_ACCESS_COOKIES]


def _go_on(next_path: str, cookie: str | None = None, *, ctx: Ctx, status: int = 303) -> Response:
    response = RedirectResponse(next_path, status_code=status, headers=NO_STORE)
    if cookie is not None:
        cookies.set_access_cookie(response, cookie, ctx.config)
    return response


@router.get("/v1/edge/check", status_code=204)
async def edge_check(request: Request, uow: Uow) -> Response:
    login = await service.check(uow, host=edge_host(request), uri=request.headers.get("x-svc-uri"),
                                cookie_values=_access_cookies(request),
                                bypass=request.headers.get("svc-access-bypass"))
    if login is None:
        return Response(status_code=204, headers={"Cache-Control": "no-store"})
    raise errors.LoginRequired(headers={"X-Svc-Login": login, "Cache-Control": "no-store"})


@router.get("/v1/edge/password")
async def password_form(request: Request, uow: Uow, ctx: Ctx) -> Response:
    host = edge_host(request)
    next_path = safe_next(request.query_params.get("next")) or "/"
    try:
        found = await service.password_host(uow, host, next_path)
    except errors.UnknownHostname as err:
        return error_page(request, err, title="Unknown site")
    if found.redirect is not None:
        return _go_on(found.redirect, ctx=ctx)
    return host_pages.password_page(host=host, next_path=next_path, service_name=ctx.settings.service_name)


@router.post("/v1/edge/password")
@runs(service.password_sign_in)
async def password_sign_in(request: Request, uow: Uow, ctx: Ctx) -> Response:
    host = edge_host(request)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return error_page(request, errors.NotAForm(), title="Bad request")
    raw = await request.body()
    try:
        fields = parse_qs(raw[:MAX_FORM].decode("utf-8"), keep_blank_values=True, max_num_fields=10,
                          strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return error_page(request, errors.NotAForm("The form is not valid"), title="Bad request")
    next_path = safe_next((fields.get("next") or [""])[0]) or "/"
    try:
        cookie = await service.password_sign_in(
            uow, host=host, password=(fields.get("password") or [""])[0], next_path=next_path,
            client=request.client.host if request.client else "-")
    except errors.UnknownHostname as err:
        return error_page(request, err, title="Unknown site")
    except (errors.WrongPassword, errors.TooManyTries) as err:
        if not wants_html(request):
            return error_page(request, err, title="")
        return host_pages.password_page(host=host, next_path=next_path, service_name=ctx.settings.service_name,
                                   error=err)
    return _go_on(next_path, cookie, ctx=ctx)


@router.get("/v1/edge/callback")
@runs(service.exchange_code)
async def callback(request: Request, uow: Uow, ctx: Ctx) -> Response:
    done = await service.exchange_code(uow, host=edge_host(request), code=request.query_params.get("code"))
    if done is None:
        return error_page(request, errors.BadCode(), title="Sign-in link not valid", home=True)
    return _go_on(done.next_path, done.cookie, ctx=ctx, status=302)
