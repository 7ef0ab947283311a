"""How a dashboard route runs: in its unit of work (the API's route class, svc/deps.py), behind the
CSRF check for anything that changes state, and with every failure turned into words for a person.

- An AppError (the same errors the API answers with) becomes a page (plain navigation) or a
  message fragment that htmx swaps into the form's result box (status kept, so nothing else moves).
- No session cookie: a page redirects to sign-in and comes back. A cookie whose session has ended
  or was signed out: a page that says so (401). htmx requests are sent to the same places.
- A form post without the right CSRF token: 403, before the unit of work opens (nothing changes)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse

from svc.auth.principal import resolve_principal
from svc.context import AppContext
from svc.deps import READ_METHODS, UnitOfWorkRoute, request_uow
from svc.errors import (
    AppError,
    BadRequest,
    Forbidden,
    Unauthorized,
    error_response,
    validation_entry,
    validation_message,
)
from svc.kit.pages import wants_html
from svc.uow import Tx, UnitOfWork
from svc.web import render
from svc.web.forms import RefusedForm
from svc.web.session import CSRF_FIELD, CSRF_HEADER, clear_session, csrf_ok, session_token
from svc.web.words import say

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class CsrfRefused(Forbidden):
    code = "csrf_failed"
    default_message = "This form could not be checked: it is from an old page or from another site"


class SignInNeeded(Unauthorized):
    """The dashboard's 401: `ended` when the browser had a session that is no longer valid."""

    def __init__(self, *, ended: bool) -> None:
        super().__init__("Your session has ended" if ended else "Sign in to continue")
        self.ended = ended


async def _sent_csrf(request: Request) -> str | None:
    sent = request.headers.get(CSRF_HEADER)
    if sent:
        return sent
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media in FORM_TYPES:
        value = (await request.form()).get(CSRF_FIELD)
        return value if isinstance(value, str) else None
    return None


def _here(request: Request) -> str:
    """The page the person is on: for htmx, the page that made the request."""
    current = request.headers.get("hx-current-url")
    if current:
        parts = urlsplit(current)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


async def error_reply(request: Request, err: AppError) -> Response:
    said = say(err, render.dashboard_of(request).hints)
    headers = dict(err.headers or {})
    if not wants_html(request):  # a script or API client on a page's address: the Error envelope
        return error_response(err)
    if render.is_htmx(request):
        return await render.render_part(request, "_error.html", status=err.status, said=said, headers=headers)
    async with _fresh_frame(request):
        return await render.render(request, "error.html", status=err.status, said=said, title=said.title,
                                   headers=headers)


@contextlib.asynccontextmanager
async def _read_unit(request: Request) -> AsyncIterator[UnitOfWork]:
    """The route's unit of work has ended: what is rendered now reads in a unit of work of its own."""
    ctx: AppContext = request.app.state.ctx
    uow = UnitOfWork(ctx, Tx.READ)
    request.state.uow = uow
    async with uow:
        yield uow


@contextlib.asynccontextmanager
async def _fresh_frame(request: Request) -> AsyncIterator[None]:
    """The route's unit of work has ended (rolled back): the error page reads the frame (who is
    signed in, their orgs) in a read unit of work of its own."""
    ctx: AppContext = request.app.state.ctx
    async with _read_unit(request) as uow:
        token = session_token(request, ctx.settings)
        principal = await resolve_principal(uow.session, token) if token else None
        request.state.viewer = principal if principal is not None and principal.kind == "session" else None
        yield


async def sign_in_reply(request: Request, err: SignInNeeded) -> Response:
    ctx: AppContext = request.app.state.ctx
    target = "/signin?next=" + quote(_here(request), safe="/") + ("&ended=1" if err.ended else "")
    response: Response
    if render.is_htmx(request):
        response = Response(status_code=200, headers={"HX-Redirect": target})
    elif err.ended:
        async with _fresh_frame(request):
            request.state.viewer = None
            response = await render.render(request, "ended.html", status=401, title="Your session has ended",
                                           signin=target)
    else:
        response = RedirectResponse(target, status_code=303)
    if err.ended:
        clear_session(response, ctx.settings)
    return response


class PageRoute(UnitOfWorkRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        changes = not (self.methods or set()) <= READ_METHODS

        async def page(request: Request) -> Response:
            ctx: AppContext = request.app.state.ctx
            if changes and not csrf_ok(request, ctx.settings, ctx.keys, await _sent_csrf(request)):
                if session_token(request, ctx.settings) is None and request.url.path != "/signin/dev":
                    return await sign_in_reply(request, SignInNeeded(ended=False))
                return await error_reply(request, CsrfRefused())
            try:
                response = await handler(request)
                if isinstance(response, RefusedForm):
                    async with _read_unit(request):
                        return await response.show(request_uow(request))
                return response
            except SignInNeeded as err:
                return await sign_in_reply(request, err)
            except AppError as err:
                return await error_reply(request, err)
            except RequestValidationError as exc:
                entries = [validation_entry(e) for e in exc.errors()[:20]]
                return await error_reply(request, BadRequest(validation_message(entries)))

        return page


def page_router() -> APIRouter:
    """The router every dashboard area uses: not in the OpenAPI document."""
    return APIRouter(route_class=PageRoute, include_in_schema=False)
