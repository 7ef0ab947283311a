"""The few browser pages svc serves outside the dashboard (a project's password form and messages,
on project hosts through the edge): small self-contained HTML, no external assets, inline style
and script allowed only by a per-response CSP nonce."""

from __future__ import annotations

import html
import secrets

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from svc.errors import AppError, BadRequest, error_response
from svc.kit.hosts import normalize_host

STYLE = """
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:26rem;margin:12vh auto;padding:2rem;background:#fff;border-radius:10px;
box-shadow:0 1px 4px rgba(0,0,0,.12)}
h1{font-size:1.25rem;margin:0 0 .75rem}
p{margin:.5rem 0}
label{display:block;margin:1rem 0 .25rem;font-weight:600}
input{box-sizing:border-box;width:100%;padding:.55rem .6rem;font:inherit;border:1px solid #b8bfcc;border-radius:6px}
button,.button{display:inline-block;margin-top:1rem;padding:.55rem 1rem;font:inherit;color:#fff;background:#2f5bd3;
border:0;border-radius:6px;cursor:pointer;text-decoration:none}
.secondary{background:#5b6476}
.error{color:#b42318;background:#fef3f2;border:1px solid #fecdca;border-radius:6px;padding:.5rem .75rem}
.muted{color:#5b6476;font-size:.9rem}
code{font-size:.85rem;word-break:break-all}
[hidden]{display:none!important}
"""


def page(title: str, body: str, *, status: int = 200, script: str = "",
         headers: dict[str, str] | None = None, style: str = "", img_src: str = "") -> HTMLResponse:
    """`style`: CSS after the common one (a project's brand color); `img_src`: the one origin images
    may come from (a project's logo), else none."""
    nonce = secrets.token_urlsafe(16)
    script_tag = f'<script nonce="{nonce}">{script}</script>' if script else ""
    document = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
                f'<meta name="viewport" content="width=device-width,initial-scale=1">'
                f'<meta name="robots" content="noindex"><title>{html.escape(title)}</title>'
                f'<style nonce="{nonce}">{STYLE}{style}</style></head>'
                f'<body><main>{body}</main>{script_tag}</body></html>')
    csp = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
           "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
           + (f"; img-src {img_src}" if img_src else ""))
    all_headers = {"Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                   "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", **(headers or {})}
    return HTMLResponse(document, status_code=status, headers=all_headers)


def edge_host(request: Request) -> str:
    """The project host a request of the edge's `/__svc/` paths came for: X-Svc-Host, which nginx
    sets from the host it routed ($svc_host; a client's header of that name is overwritten there)."""
    host = normalize_host(request.headers.get("x-svc-host"))
    if host is None:
        raise BadRequest("X-Svc-Host must name the project host")
    return host


def wants_html(request: Request) -> bool:
    """A page unless the client asks for JSON and not for HTML (then the Error envelope)."""
    accept = request.headers.get("accept", "").lower()
    return "text/html" in accept or "application/json" not in accept


def error_page(request: Request, err: AppError, *, title: str, home: bool = False) -> Response:
    """An error as a page for a browser, else as the Error envelope (same status and headers).
    `home`: offer a link to the root of the host (pages on project hosts)."""
    if not wants_html(request):
        return error_response(err)
    link = '<p><a class="button" href="/">Open the site</a></p>' if home else ""
    body = f"<h1>{html.escape(title)}</h1><p>{html.escape(err.message)}</p>{link}"
    return page(title, body, status=err.status, headers=err.headers)
