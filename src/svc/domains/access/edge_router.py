"""HTTP only: the endpoints the edge (nginx) calls, per docs/edge.md. Not for API clients, so they
are left out of the OpenAPI document.

- GET /v1/edge/check: the auth_request subrequest of protected hosts: 204 or 401 + X-Svc-Login.
- GET/POST /v1/edge/password (the host's /__svc/password): the password form and its sign-in.
- GET /v1/edge/callback (the host's /__svc/callback): one-time code -> cookie, then back to the path.

The host the browser used arrives in X-Svc-Host (set by nginx). These routes open their own short
transactions, so nothing is held while argon2 runs."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from svc.context import AppContext
from svc.deps import Ctx
from svc.domains.access import cookies, errors, pages, service
from svc.domains.access.ratelimit import RateLimiter
from svc.kit.clock import utcnow
from svc.kit.pages import error_page, wants_html

log = logging.getLogger("svc.access")

router = APIRouter(include_in_schema=False)

# Password tries: per host and client address, and per host overall (a backstop against guesses
# spread over many addresses, and against argon2 work flooding the process).
TRIES_PER_CLIENT = 10
TRIES_PER_HOST = 100
TRIES_WINDOW = 60.0
MAX_FORM = 8 * 1024
NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _host(request: Request) -> str:
    host = service.normalize_host(request.headers.get("x-svc-host"))
    if host is None:
        raise errors.BadHost("X-Svc-Host must name the project host")
    return host


def _access_cookies(request: Request) -> list[str]:
    """Every svc_access value in the Cookie header (a sibling host may have planted others, with
    longer paths so that browsers send them first). At most 16: more than nginx's 8 KiB header
    buffer can carry at 1 KiB a cookie, so the real one is never cut off."""
    values: list[str] = []
    for part in request.headers.get("cookie", "").split(";"):
        name, eq, value = part.strip().partition("=")
        if eq and name == cookies.COOKIE_NAME and value:
            values.append(value.strip('"'))
    return values[:16]


def _limiters(request: Request) -> tuple[RateLimiter, RateLimiter]:
    state = request.app.state
    if not hasattr(state, "access_password_limiters"):
        state.access_password_limiters = (RateLimiter(TRIES_PER_CLIENT, TRIES_WINDOW),
                                          RateLimiter(TRIES_PER_HOST, TRIES_WINDOW))
    limiters: tuple[RateLimiter, RateLimiter] = state.access_password_limiters
    return limiters


@router.get("/v1/edge/check", status_code=204)
async def edge_check(request: Request, ctx: Ctx) -> Response:
    host = _host(request)
    uri = request.headers.get("x-svc-uri")
    bypass = request.headers.get("svc-access-bypass")
    async with ctx.db.transaction(write=False) as session:
        login = await service.check(session, ctx.keys, ctx.settings, host=host, uri=uri,
                                    cookie_values=_access_cookies(request), bypass=bypass)
    if login is None:
        return Response(status_code=204, headers={"Cache-Control": "no-store"})
    raise errors.LoginRequired(headers={"X-Svc-Login": login, "Cache-Control": "no-store"})


@router.get("/v1/edge/password")
async def password_form(request: Request, ctx: Ctx) -> Response:
    host = _host(request)
    next_path = service.safe_next(request.query_params.get("next")) or "/"
    async with ctx.db.transaction(write=False) as session:
        found = await service.password_route(session, host)
    if found is None:
        return error_page(request, errors.UnknownHostname(details={"host": host}), title="Unknown site")
    route, _ = found
    if route.access_mode != "password":
        return RedirectResponse(next_path, status_code=303, headers=NO_STORE)
    return pages.password_page(host=host, next_path=next_path, service_name=ctx.settings.service_name)


@router.post("/v1/edge/password")
async def password_sign_in(request: Request, ctx: Ctx) -> Response:
    host = _host(request)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return error_page(request, errors.NotAForm(), title="Bad request")
    raw = await request.body()
    try:
        fields = parse_qs(raw[:MAX_FORM].decode("utf-8"), keep_blank_values=True, max_num_fields=10,
                          strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return error_page(request, errors.NotAForm("The form is not valid"), title="Bad request")
    password = (fields.get("password") or [""])[0]
    next_path = service.safe_next((fields.get("next") or [""])[0]) or "/"
    client = request.client.host if request.client else "-"
    per_client, per_host = _limiters(request)
    wait = per_client.retry_after((host, client)) or per_host.retry_after(host)
    if wait is not None:
        log.warning("password page rate limited: host=%s", host)
        err: errors.TooManyTries | errors.WrongPassword = errors.TooManyTries(
            details={"retryAfter": wait}, headers={"Retry-After": str(wait)})
        return _form_error(request, ctx, host, next_path, err)
    async with ctx.db.transaction(write=False) as session:
        found = await service.password_route(session, host)
    if found is None:
        return error_page(request, errors.UnknownHostname(details={"host": host}), title="Unknown site")
    route, stored = found
    if route.access_mode != "password":
        return RedirectResponse(next_path, status_code=303, headers=NO_STORE)
    if not await service.password_matches(stored, password):
        log.info("password page: wrong password for host=%s", host)
        return _form_error(request, ctx, host, next_path, errors.WrongPassword())
    response = RedirectResponse(next_path, status_code=303, headers=NO_STORE)
    cookies.set_access_cookie(response, service.password_cookie(ctx.keys, route, utcnow()), ctx.settings)
    log.info("password page: signed in on host=%s", host)
    return response


def _form_error(request: Request, ctx: AppContext, host: str, next_path: str,
                err: errors.TooManyTries | errors.WrongPassword) -> Response:
    if not wants_html(request):
        return error_page(request, err, title="")
    return pages.password_page(host=host, next_path=next_path, service_name=ctx.settings.service_name, error=err)


@router.get("/v1/edge/callback")
async def callback(request: Request, ctx: Ctx) -> Response:
    host = _host(request)
    code = request.query_params.get("code")
    async with ctx.db.transaction() as session:
        done = await service.exchange_code(session, ctx.keys, host=host, code=code)
    if done is None:
        return error_page(request, errors.BadCode(), title="Sign-in link not valid", home=True)
    response = RedirectResponse(done.next_path, status_code=302, headers=NO_STORE)
    cookies.set_access_cookie(response, done.cookie, ctx.settings)
    return response
