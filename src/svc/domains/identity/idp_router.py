"""HTTP only: identity-provider login (GET /v1/auth/{provider}/start and /callback).

These are browser navigations, so they answer with redirects; errors that have no trusted redirect
to go to (bad redirect, unknown state) are the Error envelope. Tokens and codes are never logged."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import RedirectResponse

from svc.deps import Ctx, Uow, any_query, api_router
from svc.domains.identity import idp_service as idp
from svc.domains.identity.idp_schemas import CodeQuery, ErrorQuery, ProviderPath, RedirectQuery, StateQuery
from svc.uow import runs

router = api_router(tags=["identity"])

_REDIRECT: dict[int | str, dict[str, Any]] = {
    302: {"description": "Redirect to the Location header", "content": None,
          "headers": {"Location": {"schema": {"type": "string"}}}}}


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=302, headers=idp.NO_STORE)


@router.get("/v1/auth/{provider}/start", status_code=302, response_class=RedirectResponse, responses=_REDIRECT,
            operation_id="idpStart",
            summary="Start sign-in at the identity provider (browser navigation)")
@runs(idp.start)
async def idp_start(provider: ProviderPath, redirect: RedirectQuery, uow: Uow, ctx: Ctx) -> RedirectResponse:
    """302 to the provider's authorize page. `redirect` is where the browser lands afterwards, with the
    session (or the error) in the URL fragment."""
    started = await idp.start(uow, configured=ctx.adapters.idp, provider=provider, redirect=redirect,
                              config=ctx.config)
    response = _redirect(started.location)
    if started.state_hash is not None:
        name, path, secure = idp.binding_cookie(ctx.config, started.state_hash)
        response.set_cookie(name, "1", max_age=int(idp.STATE_TTL.total_seconds()), path=path, secure=secure,
                            httponly=True, samesite="lax")
    return response


@router.get("/v1/auth/{provider}/callback", status_code=302, response_class=RedirectResponse,
            responses=_REDIRECT, operation_id="idpCallback",
            summary="Where the identity provider sends the browser back (browser navigation)")
@runs(idp.finish)
@any_query  # the provider adds parameters of its own (iss, session_state, ...)
async def idp_callback(provider: ProviderPath, state: StateQuery, request: Request, uow: Uow, ctx: Ctx,
                       code: CodeQuery = None, error: ErrorQuery = None) -> RedirectResponse:
    """302 to the client callback: `#token=..&expiresAt=..&userId=..&subject=..` on success,
    `#error=<code>&message=<text>` on failure. A missing, unknown, expired or used state is a 400."""
    finished = await idp.finish(uow, configured=ctx.adapters.idp, provider=provider, state=state,
                                cookies=dict(request.cookies), code=code, error=error, config=ctx.config)
    response = _redirect(finished.location)
    name, path, secure = idp.binding_cookie(ctx.config, finished.state_hash)
    response.delete_cookie(name, path=path, secure=secure, httponly=True, samesite="lax")
    return response
