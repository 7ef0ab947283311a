"""Sign-in and sign-out: dev login (when enabled) and the identity provider, into a session cookie.

The identity provider's flow is the API's (/v1/auth/{idp}/start -> provider -> callback), which
hands the session to its redirect in the URL fragment. The dashboard's redirect is
/signin/complete?b=<binding>: that page's script posts the fragment's token back, and the server
takes it only with a binding it signed for this browser's pre-session cookie, so a link carrying
someone else's token cannot sign a person in as someone else."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from fastapi import Request, Response

from svc.auth.principal import resolve_principal
from svc.deps import Ctx, Uow, request_session
from svc.domains.identity import queries as identity_queries
from svc.domains.identity import service as identity
from svc.domains.identity.idp_service import provider_for_page
from svc.domains.identity.schemas import DevLogin
from svc.domains.identity.settings import IdentitySettings
from svc.errors import BadRequest
from svc.kit.paths import safe_next
from svc.uow import Tx, use_case
from svc.web import render
from svc.web.forms import fields, parse
from svc.web.routing import page_router
from svc.web.session import clear_session, ensure_pre_session, pre_cookie_name, session_token, set_session

router = page_router()

PROVIDER_LABELS = {"github": "GitHub", "oidc": "single sign-on"}


def _binding(ctx: Ctx, pre: str) -> str:
    return ctx.keys.sign("idp binding " + pre)


@router.get("/signin")
async def signin_page(request: Request, ctx: Ctx, next: str | None = None, ended: str | None = None) -> Response:
    settings = ctx.settings
    target = safe_next(next) or "/"
    response = Response()
    pre = ensure_pre_session(request, response, settings)
    provider = None
    complete = f"{settings.public_url}/signin/complete?" + urlencode({"b": _binding(ctx, pre), "next": target})
    if provider_for_page(ctx, complete) is not None and ctx.adapters.idp is not None:
        provider = {"label": PROVIDER_LABELS.get(ctx.adapters.idp.name, ctx.adapters.idp.name),
                    "href": f"/v1/auth/{quote(ctx.adapters.idp.name)}/start?redirect={quote(complete, safe='')}"}
    page = await render.render(request, "identity/signin.html", title="Sign in", next=target, provider=provider,
                               ended=bool(ended))
    for name, value in response.headers.items():
        if name == "set-cookie":
            page.headers.append(name, value)
    return page


@router.post("/signin/dev")
async def dev_signin(request: Request, uow: Uow, ctx: Ctx) -> Response:
    if not ctx.settings.enable_dev_auth:
        raise BadRequest("Dev sign-in is off on this svc")
    form = await fields(request)
    body = parse(DevLogin, {"subject": form.get("subject", "")})
    _, token, row = await identity.sign_in(uow, provider="dev", subject=body.subject, email=None, name=None,
                                           session_days=ctx.settings_of(IdentitySettings).session_days)
    response = render.redirect(request, safe_next(form.get("next")) or "/")
    set_session(response, ctx.settings, token, row.expires_at)
    return response


@router.get("/signin/complete")
async def complete_page(request: Request) -> Response:
    """Where the identity provider's flow lands; its script posts the fragment to the form below."""
    return await render.render(request, "identity/signin_complete.html", title="Signing in",
                               binding=request.query_params.get("b", ""),
                               next=safe_next(request.query_params.get("next")) or "/")


@router.post("/signin/complete")
@use_case(Tx.READ)  # a form post that only reads: the session is already made
async def complete(request: Request, ctx: Ctx) -> Response:
    form = await fields(request)
    pre = request.cookies.get(pre_cookie_name(ctx.settings), "")
    if not pre or not ctx.keys.verify("idp binding " + pre, form.get("b", "")):
        raise BadRequest("This sign-in was not started in this browser: start again from the sign-in page")
    if form.get("error"):
        raise BadRequest(form.get("message") or "The identity provider refused the sign-in")
    token = form.get("token", "")
    principal = await resolve_principal(request_session(request), token) if token else None
    if principal is None or principal.kind != "session":
        raise BadRequest("The identity provider's answer held no valid session: start again")
    response = render.redirect(request, safe_next(form.get("next")) or "/")
    expires_at = await identity_queries.session_expiry(request_session(request), token)
    if expires_at is None:
        raise BadRequest("The identity provider's answer held no valid session: start again")
    set_session(response, ctx.settings, token, expires_at)
    return response


@router.post("/signout")
async def signout(request: Request, uow: Uow, ctx: Ctx) -> Response:
    token = session_token(request, ctx.settings)
    if token:
        await identity.sign_out(uow, token)
    response = render.redirect(request, "/signin", flash="You are signed out.")
    clear_session(response, ctx.settings)
    return response
