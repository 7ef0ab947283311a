"""`/` on the API's address: a small page that says what answers there (svc, the control API of
this deployment, its version) and where to go next: the API docs, the OpenAPI document, the CLI.
A client that asks for JSON (Accept: application/json, without text/html) gets the same facts as
a small JSON object. Not in the OpenAPI document; the dashboard will take `/` over."""

from __future__ import annotations

import html

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from svc import __version__
from svc.context import AppContext
from svc.kit.pages import page, wants_html


def install_home(app: FastAPI, *, docs_url: str, openapi_url: str) -> None:
    @app.get("/", include_in_schema=False)
    async def home(request: Request) -> Response:
        ctx: AppContext = request.app.state.ctx
        settings = ctx.settings
        if not wants_html(request):
            return JSONResponse({
                "service": "svc", "name": settings.service_name, "version": __version__,
                "api": f"{settings.public_url}/v1", "docs": docs_url, "openapi": openapi_url,
            }, headers={"Cache-Control": "no-cache"})
        name = html.escape(settings.service_name)
        url = html.escape(settings.public_url)
        named = "" if settings.service_name == "svc" else f" ({name})"
        dev = ('<p class="muted">Dev sign-in is on here: <code>svc login --dev &lt;your name&gt;</code> signs in '
               "without an identity provider.</p>") if settings.enable_dev_auth else ""
        body = (f"<h1>svc{named}</h1>"
                f"<p>This address is the control API of this svc deployment{named}: the HTTP API that "
                f"the <code>svc</code> command line, scripts and, later, the dashboard use to manage orgs, "
                f"projects and deployments.</p>"
                f'<p class="muted">svc version {html.escape(__version__)}</p>'
                f'<ul><li><a href="{docs_url}">API docs</a>: every operation, its parameters and answers</li>'
                f'<li><a href="{openapi_url}">OpenAPI document</a>: the same, for tools</li></ul>'
                f"<p>From a terminal, with the <code>svc</code> command line:</p>"
                f"<p><code>export SVC_API_URL={url}</code><br><code>svc login</code></p>"
                f"{dev}"
                f'<p class="muted">Then <code>svc deploy &lt;directory&gt;</code> publishes a site; '
                f"<code>svc --help</code> lists the rest.</p>")
        return page(f"{settings.service_name} control API", body, headers={"Cache-Control": "no-cache"})
