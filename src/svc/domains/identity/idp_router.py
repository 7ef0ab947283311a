"""HTTP only: identity-provider login (GET /v1/auth/{provider}/start and /callback).

These are browser navigations, so they answer with redirects; errors that have no trusted redirect
to go to (bad redirect, unknown state) are the Error envelope. The provider is reached outside any
database transaction. Tokens and codes are never logged."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request
from fastapi.responses import RedirectResponse

from svc.adapters.idp.port import IdpError
from svc.deps import Ctx, api_router
from svc.domains.identity import idp_service as idp
from svc.domains.identity import service
from svc.domains.identity.idp_schemas import CodeQuery, ErrorQuery, ProviderPath, RedirectQuery, StateQuery
from svc.domains.identity.schemas import Session

log = logging.getLogger("svc.identity.idp")
router = api_router(tags=["identity"])

_REDIRECT: dict[int | str, dict[str, Any]] = {
    302: {"description": "Redirect to the Location header", "content": None,
          "headers": {"Location": {"schema": {"type": "string"}}}}}


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=302, headers=idp.NO_STORE)


@router.get("/v1/auth/{provider}/start", status_code=302, response_class=RedirectResponse, responses=_REDIRECT,
            operation_id="idpStart",
            summary="Start sign-in at the identity provider (browser navigation)")
async def idp_start(provider: ProviderPath, redirect: RedirectQuery, ctx: Ctx) -> RedirectResponse:
    """302 to the provider's authorize page. `redirect` is where the browser lands afterwards, with the
    session (or the error) in the URL fragment."""
    settings = ctx.settings
    provider_ = idp.provider_for(ctx.adapters.idp, provider)
    target = idp.check_redirect(redirect, settings.redirect_allowlist)
    login = idp.new_login()
    try:
        url = await idp.authorize_url(provider_, login, idp.callback_url(settings, provider_))
    except IdpError as exc:  # e.g. OIDC discovery failed: the client learns it at its own callback
        log.warning("identity-provider sign-in could not start: provider=%s reason=%s", provider_.name, exc)
        return _redirect(idp.failure_location(target, exc.code))
    async with ctx.db.transaction() as session:
        await idp.save_login(session, login, target)
    response = _redirect(url)
    name, path, secure = idp.binding_cookie(settings, login.state_hash)
    response.set_cookie(name, "1", max_age=int(idp.STATE_TTL.total_seconds()), path=path, secure=secure,
                        httponly=True, samesite="lax")
    log.info("identity-provider sign-in started: provider=%s", provider_.name)
    return response


@router.get("/v1/auth/{provider}/callback", status_code=302, response_class=RedirectResponse,
            responses=_REDIRECT, operation_id="idpCallback",
            summary="Where the identity provider sends the browser back (browser navigation)")
async def idp_callback(provider: ProviderPath, state: StateQuery, request: Request, ctx: Ctx,
                       code: CodeQuery = None, error: ErrorQuery = None) -> RedirectResponse:
    """302 to the client callback: `#token=..&expiresAt=..&userId=..&subject=..` on success,
    `#error=<code>&message=<text>` on failure. A missing, unknown, expired or used state is a 400."""
    settings = ctx.settings
    provider_ = idp.provider_for(ctx.adapters.idp, provider)
    async with ctx.db.transaction() as session:
        login = await idp.take_login(session, state)
        cookie, path, secure = idp.binding_cookie(settings, login.state_hash)
        if request.cookies.get(cookie) != "1":
            raise idp.LoginOtherBrowser(headers=idp.NO_STORE)  # rolls back: the right browser may still finish
    try:
        who = await idp.identify(provider_, login, code=code, error=error,
                                 redirect_uri=idp.callback_url(settings, provider_))
    except IdpError as exc:
        log.warning("identity-provider sign-in failed: provider=%s code=%s reason=%s", provider_.name, exc.code, exc)
        response = _redirect(idp.failure_location(login.redirect, exc.code))
    else:
        async with ctx.db.transaction() as session:
            user, token, row = await service.sign_in(session, provider=provider_.name, subject=who.subject,
                                                     email=who.email, name=who.name,
                                                     session_days=settings.session_days)
        log.info("identity-provider sign-in: provider=%s user=%s", provider_.name, user.id)
        body = Session(token=token, expires_at=row.expires_at, user_id=user.id, subject=user.subject)
        response = _redirect(idp.success_location(login.redirect, body))
    response.delete_cookie(cookie, path=path, secure=secure, httponly=True, samesite="lax")
    return response
