"""HTTP only: the auth service on a project's hosts, reached as /__svc/auth/* through the edge (its
`/__svc/auth/` location sends them to /v1/edge/auth/*; docs/auth.md "On the project's hosts").
Left out of the OpenAPI document: no API client calls them.

- GET  /__svc/auth/               the sign-in page (brand, the configured providers; no JavaScript)
- GET  /__svc/auth/login/{p}      a new sign-in: state + PKCE (+ nonce), then the provider's page
- GET  /__svc/auth/callback/{p}   the provider's answer: state checked once, code exchanged, the
                                  end user found or made, a session and its cookie, back to `next`
- GET  /__svc/auth/session        the signed-in end user as JSON, or 401 (renews svc_auth_user)
- POST /__svc/auth/logout         ends the session (`everywhere=1`: every session of the user)

A project not granted auth (never, or revoked) answers 421, which the edge turns into the
project's own answer for that path (its worker or files). The host arrives in X-Svc-Host."""

from __future__ import annotations

import hmac
import logging
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from svc.adapters.edge.settings import edge_url
from svc.deps import Ctx, Uow, api_router
from svc.domains.app_auth import edge_cookies as cookies
from svc.domains.app_auth import edge_errors as errors
from svc.domains.app_auth import edge_pages, queries, service, sessions, signin
from svc.domains.projects import service as projects
from svc.errors import AppError, error_response
from svc.kit import auth_cookie
from svc.kit.clock import utcnow
from svc.kit.pages import edge_host, error_page
from svc.kit.paths import safe_next
from svc.models import AuthGrant, AuthProvider
from svc.uow import Tx, UnitOfWork, runs, use_case

log = logging.getLogger("svc.app_auth")
router = api_router(include_in_schema=False)

NO_STORE = {"Cache-Control": "private, no-store", "Referrer-Policy": "no-referrer"}
MAX_FORM = 4 * 1024
MAX_CODE = 2048


async def _served(uow: UnitOfWork, host: str) -> tuple[str, AuthGrant, list[AuthProvider]]:
    """(project id, grant, providers) of a host whose project serves sign-in; NotServed else."""
    route = await projects.route_for_host(uow, host)
    if route is None or route.pending:
        raise errors.UnknownHost()
    grant = await queries.grant(uow.session, route.project_id)
    if grant is None:
        raise errors.NotServed()
    providers = await queries.providers(uow.session, route.project_id)
    # What follows asks the project's database (or a provider): nothing of the store is held then.
    await uow.close_reads()
    return route.project_id, grant, providers


def _provider(providers: list[AuthProvider], name: str) -> AuthProvider:
    found = next((p for p in providers if p.name == name), None)
    if found is None or name not in signin.PROVIDERS:
        raise errors.UnknownProvider()
    return found


def _callback_url(ctx: Ctx, host: str, provider: str) -> str:
    """Exactly what the project registers at the provider (AuthStatus.hosts: one per host)."""
    return f"{edge_url(ctx.config, host)}/__svc/auth/callback/{provider}"


@router.get("/v1/edge/auth/")
async def signin_page(request: Request, uow: Uow) -> Response:
    host = edge_host(request)
    _, grant, providers = await _served(uow, host)
    next_path = safe_next(request.query_params.get("next")) or "/"
    return edge_pages.signin_page(grant, [p.name for p in providers if p.name in signin.PROVIDERS],
                                  host=host, next_path=next_path)


def _hint(request: Request) -> str | None:
    """?login_hint=: the account the app suggests to the provider (an email or a login name)."""
    hint = (request.query_params.get("login_hint") or "").strip()
    return hint if 0 < len(hint) <= 320 and hint.isprintable() else None


@use_case(Tx.READ)  # the provider's discovery is asked with nothing of the store held
async def start(uow: UnitOfWork, *, host: str, provider: str, next_path: str, redirect_uri: str,
                login_hint: str | None) -> tuple[str, str]:
    """(the provider's authorize URL, the sealed flow cookie) of a new sign-in."""
    _, _, providers = await _served(uow, host)
    app = _provider(providers, provider)
    flow = signin.new_flow()
    try:
        url = await signin.authorize_url(uow.ctx.config, provider=provider, client_id=app.client_id,
                                         redirect_uri=redirect_uri, flow=flow, login_hint=login_hint)
    except signin.SigninFailed as exc:
        log.warning("end-user sign-in could not start: host=%s provider=%s reason=%s", host, provider, exc)
        raise errors.SigninRefused("The provider could not be reached: try again later") from None
    sealed = cookies.seal_flow(uow.ctx.keys, host, cookies.FlowCookie(
        provider=provider, state=flow.state, verifier=flow.verifier, nonce=flow.nonce, next_path=next_path,
        expires=int(utcnow().timestamp()) + cookies.FLOW_SECONDS))
    return url, sealed


@router.get("/v1/edge/auth/login/{provider}")
@runs(start)
async def login(provider: str, request: Request, uow: Uow, ctx: Ctx) -> Response:
    host = edge_host(request)
    next_path = safe_next(request.query_params.get("next")) or "/"
    try:
        url, sealed = await start(uow, host=host, provider=provider, next_path=next_path,
                                  redirect_uri=_callback_url(ctx, host, provider), login_hint=_hint(request))
    except errors.NotServed:
        raise
    except AppError as err:
        return error_page(request, err, title="Sign-in not available", home=True)
    response = RedirectResponse(url, status_code=302, headers=NO_STORE)
    cookies.set_flow(response, sealed, ctx.config)
    return response


@use_case(Tx.READ)  # the provider is asked with nothing of the store held; the rows are the project's
async def finish(uow: UnitOfWork, *, host: str, provider: str, flow: cookies.FlowCookie | None, state: str | None,
                 code: str | None, error: str | None, redirect_uri: str) -> tuple[sessions.Opened, str]:
    """The callback: (the new session, where to go)."""
    project_id, grant, providers = await _served(uow, host)
    app = _provider(providers, provider)
    # The state is checked against the sealed cookie of the browser that started this sign-in, for
    # this provider; the cookie goes with this answer, so a state is taken once.
    if flow is None or flow.provider != provider or not state or not _same(state, flow.state):
        raise errors.StateInvalid()
    if error is not None:
        raise errors.SigninRefused("Sign-in was cancelled at the provider" if error == "access_denied" else None)
    if not code or len(code) > MAX_CODE:
        raise errors.SigninRefused()
    secret = service.client_secret(uow.ctx, app)
    days = grant.session_days
    try:
        who = await signin.exchange(uow.ctx.config, provider=provider, client_id=app.client_id, client_secret=secret,
                                    redirect_uri=redirect_uri, code=code,
                                    flow=signin.Flow(state=flow.state, verifier=flow.verifier, nonce=flow.nonce))
    except signin.SigninFailed as exc:
        log.warning("end-user sign-in failed: host=%s provider=%s reason=%s", host, provider, exc)
        raise errors.SigninRefused() from None
    user = await sessions.find_or_make_user(uow, project_id, who)
    opened = await sessions.open_session(uow, project_id, user, days)
    log.info("end-user sign-in: project=%s provider=%s user=%s", project_id, provider, user.id)
    return opened, flow.next_path


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


@router.get("/v1/edge/auth/callback/{provider}")
@runs(finish)
async def callback(provider: str, request: Request, uow: Uow, ctx: Ctx) -> Response:
    host = edge_host(request)
    q = request.query_params
    flow = cookies.open_flow(ctx.keys, host, request.cookies.get(cookies.FLOW), int(utcnow().timestamp()))
    try:
        opened, next_path = await finish(uow, host=host, provider=provider, flow=flow, state=q.get("state"),
                                         code=q.get("code"), error=q.get("error"),
                                         redirect_uri=_callback_url(ctx, host, provider))
    except errors.NotServed:
        raise
    except AppError as err:
        response = error_page(request, err, title="Sign-in failed", home=True)
        cookies.clear_flow(response, ctx.config)
        response.headers["Cache-Control"] = "private, no-store"
        return response
    response = RedirectResponse(next_path, status_code=302, headers=NO_STORE)
    cookies.clear_flow(response, ctx.config)
    seconds = opened.expires - int(utcnow().timestamp())
    cookies.set_session(response, opened.token, seconds, ctx.config)
    _set_user(response, ctx, host, opened.user, opened.expires)
    return response


def _set_user(response: Response, ctx: Ctx, host: str, user: sessions.EndUser, session_expires: int) -> None:
    now = int(utcnow().timestamp())
    expires = min(session_expires, now + cookies.USER_SECONDS)
    value = auth_cookie.issue(auth_cookie.edge_key(ctx.keys), host, expires, user.public())
    cookies.set_user(response, value, expires - now, ctx.config)


@use_case(Tx.READ)
async def current(uow: UnitOfWork, *, host: str, token: str | None) -> tuple[sessions.EndUser, int] | None:
    project_id, _, _ = await _served(uow, host)
    return await sessions.session_user(uow, project_id, token)


@router.get("/v1/edge/auth/session")
@runs(current)
async def session(request: Request, uow: Uow, ctx: Ctx) -> Response:
    host = edge_host(request)
    found = await current(uow, host=host, token=request.cookies.get(cookies.SESSION))
    if found is None:
        response: Response = error_response(errors.NotSignedIn(headers=NO_STORE))
        if request.cookies.get(cookies.SESSION) or request.cookies.get(cookies.USER):
            cookies.clear(response, ctx.config)  # an ended or expired session: its cookies go too
        return response
    user, expires = found
    # The same body the edge answers from the svc_auth_user cookie (lua/svc_auth.lua).
    response = JSONResponse({"user": user.public()}, headers=NO_STORE)
    _set_user(response, ctx, host, user, expires)
    return response


@use_case(Tx.READ)
async def end(uow: UnitOfWork, *, host: str, token: str | None, everywhere: bool) -> None:
    project_id, _, _ = await _served(uow, host)
    await sessions.end_session(uow, project_id, token, everywhere=everywhere)


@router.get("/v1/edge/auth/logout")
async def logout_page(request: Request, uow: Uow) -> Response:
    """A link to /__svc/auth/logout: a page whose button posts the form (a GET never signs out: a
    page of another site could link it)."""
    host = edge_host(request)
    _, grant, _ = await _served(uow, host)
    return edge_pages.logout_page(grant, next_path=safe_next(request.query_params.get("next")) or "/")


@router.post("/v1/edge/auth/logout")
@runs(end)
async def logout(request: Request, uow: Uow, ctx: Ctx) -> Response:
    """A form post (the app's "Sign out" button) or fetch: ends the session, clears the cookies,
    then back to `next` (a form) or 204. SameSite=Lax keeps other sites from signing people out."""
    host = edge_host(request)
    raw = (await request.body())[:MAX_FORM]
    try:
        fields = parse_qs(raw.decode("utf-8"), max_num_fields=10) if raw else {}
    except (UnicodeDecodeError, ValueError):
        fields = {}
    everywhere = (fields.get("everywhere") or request.query_params.getlist("everywhere") or [""])[0] in ("1", "true")
    await end(uow, host=host, token=request.cookies.get(cookies.SESSION), everywhere=everywhere)
    next_path = safe_next((fields.get("next") or [request.query_params.get("next") or ""])[0])
    response: Response = (RedirectResponse(next_path, status_code=303, headers=NO_STORE) if next_path
                          else Response(status_code=204, headers=NO_STORE))
    cookies.clear(response, ctx.config)
    return response
