"""The dashboard: server-rendered pages (Jinja2 templates, htmx for the parts that update in place)
at `/` on the API's address, calling the same use cases as the API (docs/dashboard.md).

This package is the dashboard's frame, not its pages: each area's pages and templates live in its
own package (domains/<area>/pages.py, templates/) and reach the dashboard through its manifest.
Layout: dashboard.py (the installed dashboard: the areas' templates, hints, navigation, frame
parts), routing.py (how a page route runs: unit of work, CSRF, errors in words), deps.py (who is
looking, from the session cookie), session.py (the cookie and CSRF tokens), render.py (templates,
the shared frame, redirects with a one-time notice), forms.py (form fields through the API's
request models), words.py (error codes said to a person), assets.py (static files), templates/
(the frame, shared macros, error pages) and static/."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from svc.errors import NotFound, http_error_response
from svc.kit.pages import wants_html
from svc.web.assets import Assets, asset_router
from svc.web.dashboard import Dashboard, DashboardArea
from svc.web.routing import error_reply
from svc.web.words import HINTS


def install_dashboard(app: FastAPI, areas: Sequence[DashboardArea]) -> None:
    assets = Assets()
    app.state.assets = assets
    app.state.dashboard = Dashboard(areas, HINTS)
    app.include_router(asset_router(assets))
    for area in areas:
        for router in area.pages:
            app.include_router(router)

    async def not_found_or_envelope(request: Request, exc: Exception) -> Response:
        """A browser that asks for a page that does not exist gets a page that says so; the API
        (and any client that wants JSON) keeps the Error envelope."""
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404 and not request.url.path.startswith("/v1") and wants_html(request):
            return await error_reply(request, NotFound("There is no page at this address"))
        return http_error_response(exc)

    app.add_exception_handler(StarletteHTTPException, not_found_or_envelope)
