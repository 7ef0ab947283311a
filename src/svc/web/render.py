"""Pages from templates: the dashboard's Jinja2 environment (web/dashboard.py), the frame every page
shares (who is signed in, the navigation, what the areas add: the org switcher's orgs, the org in
view; the CSRF token, a one-time notice), and the response: HTML, gzipped when it pays, never
cached, under a strict Content-Security-Policy (scripts and styles from svc's own /static only)."""

from __future__ import annotations

import base64
import gzip
import hashlib
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from svc import __version__
from svc.auth.caller import Principal
from svc.auth.roles import at_least
from svc.context import AppContext
from svc.models import Role
from svc.settings import Settings
from svc.web.assets import Assets
from svc.web.dashboard import Dashboard, NavLink
from svc.web.session import CSRF_FIELD, csrf_token

FLASH_COOKIE = "svc_flash"
GZIP_MIN_BYTES = 1400

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {"Content-Security-Policy": CSP, "Cache-Control": "no-store", "Referrer-Policy": "same-origin",
           "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Vary": "Accept-Encoding, HX-Request"}


def element_id(prefix: str, *parts: str) -> str:
    """A stable id for a page element standing for a thing whose name holds dots, "*", "_" or "@"
    (a record set, a hostname): the prefix and a short hash of the name."""
    return f"{prefix}-" + hashlib.sha256(" ".join(parts).encode()).hexdigest()[:10]


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def _ctx(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


def dashboard_of(request: Request) -> Dashboard:
    dashboard: Dashboard = request.app.state.dashboard
    return dashboard


def assets_of(request: Request) -> Assets:
    assets: Assets = request.app.state.assets
    return assets


def _take_flash(request: Request) -> str | None:
    value = request.cookies.get(FLASH_COOKIE)
    if not value or "." not in value:
        return None
    encoded, signature = value.rsplit(".", 1)
    if not _ctx(request).keys.verify("flash " + encoded, signature):
        return None
    try:
        return base64.urlsafe_b64decode(encoded.encode()).decode()[:300]
    except ValueError:
        return None


def _html(request: Request, text: str, status: int, headers: dict[str, str] | None = None) -> HTMLResponse:
    body = text.encode()
    all_headers = {**HEADERS, **(headers or {})}
    if len(body) >= GZIP_MIN_BYTES and "gzip" in request.headers.get("accept-encoding", ""):
        body = gzip.compress(body, 6, mtime=0)
        all_headers["Content-Encoding"] = "gzip"
    return HTMLResponse(body, status_code=status, headers=all_headers)


def _may_see(link: NavLink, role: str) -> bool:
    """Whether a member with `role` is offered `link` (a page their role cannot open is not)."""
    return at_least(Role(role), link.role)


def _is_operator(settings: Settings, viewer: Principal | None) -> bool:
    user = viewer.user if viewer is not None else None
    return user is not None and settings.is_operator(email=user.email, provider=user.provider, subject=user.subject)


async def frame(request: Request) -> dict[str, Any]:
    """What base.html needs: the signed-in user, the navigation, and what the areas add (the org
    switcher's orgs and the org in view)."""
    ctx = _ctx(request)
    dashboard = dashboard_of(request)
    viewer: Principal | None = getattr(request.state, "viewer", None)
    values: dict[str, Any] = {"orgs": [], "org": None}
    for part in dashboard.frame_parts:
        values.update(await part(request, viewer))
    assets = assets_of(request)
    return {
        **values,
        "service_name": ctx.settings.service_name, "version": __version__, "public_url": ctx.settings.public_url,
        "user": viewer.user if viewer else None, "operator": _is_operator(ctx.settings, viewer),
        "nav": dashboard.nav, "may_see": _may_see, "path": request.url.path,
        "csrf": csrf_token(request, ctx.settings, ctx.keys), "csrf_field": CSRF_FIELD,
        "asset": assets.url, "flash": _take_flash(request), "dev_auth": ctx.settings.enable_dev_auth,
    }


async def render(request: Request, template: str, *, status: int = 200, headers: dict[str, str] | None = None,
                 **values: Any) -> HTMLResponse:
    """A whole page, or (for an htmx request that names a block) just that part."""
    page = {**await frame(request), **values}
    response = _html(request, dashboard_of(request).env.get_template(template).render(page), status, headers)
    if page["flash"]:
        response.delete_cookie(FLASH_COOKIE, path="/")
    return response


async def render_part(request: Request, template: str, *, status: int = 200,
                      headers: dict[str, str] | None = None, **values: Any) -> HTMLResponse:
    """A fragment for htmx to swap in (no frame, no memberships query)."""
    ctx = _ctx(request)
    page = {"csrf": csrf_token(request, ctx.settings, ctx.keys), "csrf_field": CSRF_FIELD,
            "asset": assets_of(request).url, **values}
    return _html(request, dashboard_of(request).env.get_template(template).render(page), status, headers)


def redirect(request: Request, url: str, *, flash: str | None = None) -> Response:
    """After a change: the next page (post/redirect/get). htmx follows HX-Redirect; a plain form
    post follows the 303. `flash` is a one-time notice the next page shows (signed, never a secret)."""
    response: Response
    if is_htmx(request):
        response = Response(status_code=200, headers={"HX-Redirect": url})
    else:
        response = RedirectResponse(url, status_code=303)
    if flash:
        encoded = base64.urlsafe_b64encode(flash.encode()).decode()
        response.set_cookie(FLASH_COOKIE, f"{encoded}.{_ctx(request).keys.sign('flash ' + encoded)}", max_age=60,
                            path="/", httponly=True, samesite="lax",
                            secure=_ctx(request).settings.public_url.startswith("https://"))
    return response
