"""The pages of end-user sign-in on a project's host: the sign-in page (the project's brand name,
color and logo; a link per configured provider) and the sign-out confirmation. Plain HTML: they
work without JavaScript (svc.kit.pages: no script at all here)."""

from __future__ import annotations

import html
import re
from urllib.parse import quote, urlsplit

from fastapi.responses import HTMLResponse

from svc.domains.app_auth.signin import TITLES
from svc.kit.pages import page
from svc.models import AuthGrant

_COLOR = re.compile(r"#[0-9a-fA-F]{6}")
_NETLOC = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?")


def _brand(grant: AuthGrant, host: str) -> tuple[str, str, str, str]:
    """(name, logo tag, extra CSS, the logo's origin for img-src)."""
    name = grant.brand_name or host
    css = ""
    if grant.brand_color and _COLOR.fullmatch(grant.brand_color):
        css = f"button,.button{{background:{grant.brand_color}}}h1{{color:{grant.brand_color}}}"
    logo, origin = "", ""
    if grant.logo_url:
        parts = urlsplit(grant.logo_url)
        # The origin goes into the CSP header: a host (and port) only, never a `;` or `,` of the tenant's.
        plain_origin = _NETLOC.fullmatch(parts.netloc) is not None
        if plain_origin and (parts.scheme == "https"
                             or (parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1"))):
            origin = f"{parts.scheme}://{parts.netloc}"
            logo = (f'<img class="logo" src="{html.escape(grant.logo_url, quote=True)}" alt="" width="48" '
                    f'height="48">')
    css += (".logo{display:block;margin:0 0 1rem;max-height:48px;width:auto}"
            ".providers a{display:block;text-align:center}")
    return name, logo, css, origin


def signin_page(grant: AuthGrant, providers: list[str], *, host: str, next_path: str) -> HTMLResponse:
    name, logo, css, origin = _brand(grant, host)
    nxt = quote(next_path, safe="")
    links = "".join(f'<a class="button" id="signin-{p}" href="/__svc/auth/login/{p}?next={nxt}">'
                    f"Continue with {TITLES[p]}</a>" for p in providers)
    if not links:
        links = '<p class="muted">Sign-in is not set up for this site yet.</p>'
    body = (f"{logo}<h1>Sign in to {html.escape(name)}</h1>"
            f'<div class="providers">{links}</div>'
            f'<p class="muted">{html.escape(host)}</p>')
    return page(f"Sign in to {name}", body, style=css, img_src=origin,
                headers={"Cache-Control": "private, no-store"})


def logout_page(grant: AuthGrant, *, next_path: str) -> HTMLResponse:
    name = grant.brand_name or "this site"
    _, _, css, _ = _brand(grant, "")
    body = (f"<h1>Sign out of {html.escape(name)}?</h1>"
            f'<form method="post" action="/__svc/auth/logout">'
            f'<input type="hidden" name="next" value="{html.escape(next_path, quote=True)}">'
            f'<button type="submit" id="signout">Sign out</button></form>'
            f'<form method="post" action="/__svc/auth/logout">'
            f'<input type="hidden" name="next" value="{html.escape(next_path, quote=True)}">'
            f'<input type="hidden" name="everywhere" value="1">'
            f'<button type="submit" class="secondary" id="signout-everywhere">Sign out everywhere</button></form>')
    return page(f"Sign out of {name}", body, style=css, headers={"Cache-Control": "private, no-store"})
