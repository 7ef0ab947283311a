"""The browser pages of access control: the password form and messages (served on project hosts
through the edge's /__svc/ paths) and the dashboard's authorize page (GET /access/authorize on the
svc API, the org login round trip). Small self-contained HTML: no external assets, inline style and
script allowed only by a per-response CSP nonce."""

from __future__ import annotations

import html
import json
import logging
import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from svc.deps import Ctx
from svc.domains.access import errors, service
from svc.domains.access.schemas import MAX_HOST, MAX_NEXT
from svc.domains.identity.idp_service import check_redirect
from svc.errors import AppError, error_response

log = logging.getLogger("svc.access")

router = APIRouter(include_in_schema=False)

AUTHORIZE_PATH = "/access/authorize"

_STYLE = """
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
[hidden]{display:none!important}
"""


def _page(title: str, body: str, *, status: int = 200, script: str = "",
          headers: dict[str, str] | None = None) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    script_tag = f'<script nonce="{nonce}">{script}</script>' if script else ""
    document = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
                f'<meta name="viewport" content="width=device-width,initial-scale=1">'
                f'<meta name="robots" content="noindex"><title>{html.escape(title)}</title>'
                f'<style nonce="{nonce}">{_STYLE}</style></head><body><main>{body}</main>{script_tag}</body></html>')
    csp = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
           "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    all_headers = {"Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                   "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", **(headers or {})}
    return HTMLResponse(document, status_code=status, headers=all_headers)


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
    return _page(title, body, status=err.status, headers=err.headers)


def password_page(*, host: str, next_path: str, service_name: str, error: AppError | None = None) -> HTMLResponse:
    """The form of a password-protected project; with `error`, shown again with that error's status."""
    problem = f'<p class="error" role="alert">{html.escape(error.message)}</p>' if error else ""
    body = (f"<h1>This site is password-protected</h1>"
            f'<p class="muted">{html.escape(host)}</p>{problem}'
            f'<form method="post" action="/__svc/password">'
            f'<input type="hidden" name="next" value="{html.escape(next_path, quote=True)}">'
            f'<label for="password">Password</label>'
            f'<input id="password" name="password" type="password" autocomplete="current-password" '
            f'maxlength="256" required autofocus>'
            f'<button type="submit">Continue</button></form>'
            f'<p class="muted">Protected by {html.escape(service_name)}.</p>')
    status = error.status if error else 200
    return _page("Password required", body, status=status, headers=error.headers if error else None)


# --- the authorize page (dashboard side of the org login round trip) ---

_AUTHORIZE_SCRIPT = r"""
(function () {
  var cfg = JSON.parse(document.getElementById('svc-config').textContent);
  function $(id) { return document.getElementById(id); }
  var params = new URLSearchParams(location.search);
  var to = params.get('to') || '', next = params.get('next') || '/';
  $('host').textContent = to;
  function show(id) {
    ['working', 'signin', 'problem'].forEach(function (s) { $(s).hidden = s !== id; });
  }
  function problem(text, canSwitch) {
    $('problem-text').textContent = text;
    $('switch').hidden = !canSwitch;
    show('problem');
  }
  function signin(note) {
    $('signin-note').textContent = note || '';
    $('signin-note').hidden = !note;
    show('signin');
  }
  function json(r) { return r.json().catch(function () { return {}; }); }
  function authorize(token) {
    show('working');
    fetch('/v1/access/authorize', {
      method: 'POST',
      headers: {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + token},
      body: JSON.stringify({to: to, next: next})
    }).then(function (r) {
      return json(r).then(function (body) {
        if (r.ok) { location.replace(body.redirect); return; }
        if (r.status === 401) {
          localStorage.removeItem('svc_token');
          signin('Your session has ended: sign in again.');
        } else if (r.status === 403) {
          problem('You are not a member of the org that owns ' + to +
                  '. Ask an admin of that org to add you, or sign in as someone else.', true);
          fetch('/v1/me', {headers: {'Authorization': 'Bearer ' + token}}).then(function (m) {
            return m.ok ? m.json() : null;
          }).then(function (me) {
            if (me && me.user) { $('who').textContent = 'Signed in as ' + me.user.subject + '.'; }
          }).catch(function () {});
        } else if (r.status === 404) {
          problem('svc serves no project at ' + to + '.', false);
        } else {
          problem(body.message || ('svc answered ' + r.status + '.'), false);
        }
      });
    }).catch(function () { problem('svc could not be reached: try again.', false); });
  }
  if (cfg.devAuth) {
    $('dev').hidden = false;
    $('dev').addEventListener('submit', function (e) {
      e.preventDefault();
      var subject = $('subject').value.trim();
      if (!subject) { return; }
      fetch('/v1/auth/dev/login', {
        method: 'POST', headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({subject: subject})
      }).then(function (r) {
        return json(r).then(function (body) {
          if (!r.ok) { signin(body.message || 'Sign-in failed.'); return; }
          localStorage.setItem('svc_token', body.token);
          authorize(body.token);
        });
      }).catch(function () { signin('svc could not be reached: try again.'); });
    });
  }
  if (cfg.provider) {
    var link = $('provider');
    link.hidden = false;
    link.textContent = 'Sign in with ' + cfg.providerLabel;
    link.href = cfg.publicUrl + '/v1/auth/' + encodeURIComponent(cfg.provider) + '/start?redirect=' +
      encodeURIComponent(cfg.pageUrl + location.search);
  }
  if (!cfg.devAuth && !cfg.provider) { $('none').hidden = false; }
  $('switch').addEventListener('click', function () {
    localStorage.removeItem('svc_token');
    $('who').textContent = '';
    signin('');
  });
  if (location.hash.length > 1) {
    var fragment = new URLSearchParams(location.hash.slice(1));
    history.replaceState(null, '', location.pathname + location.search);
    if (fragment.get('token')) {
      localStorage.setItem('svc_token', fragment.get('token'));
    } else if (fragment.get('error')) {
      signin(fragment.get('message') || 'Sign-in failed.');
      return;
    }
  }
  var token = localStorage.getItem('svc_token');
  if (token) { authorize(token); } else { signin(''); }
})();
"""

_AUTHORIZE_BODY = """
<h1>Sign in to continue</h1>
<p><strong id="host"></strong> is open to members of its org only.</p>
<section id="working"><p class="muted">Checking your access&hellip;</p></section>
<section id="signin" hidden>
  <p id="signin-note" class="error" role="alert" hidden></p>
  <form id="dev" hidden>
    <label for="subject">Dev sign-in: your name</label>
    <input id="subject" name="subject" autocomplete="username" maxlength="100" required>
    <button type="submit">Sign in</button>
  </form>
  <p><a id="provider" class="button" hidden></a></p>
  <p id="none" class="error" hidden>No sign-in method is configured on this svc.</p>
</section>
<section id="problem" hidden>
  <p id="problem-text" class="error" role="alert"></p>
  <p id="who" class="muted"></p>
  <button id="switch" class="secondary" type="button" hidden>Sign in as someone else</button>
</section>
"""

_PROVIDER_LABELS = {"github": "GitHub", "oidc": "single sign-on"}


def _config_json(data: dict[str, Any]) -> str:
    """JSON for a <script type="application/json"> block: '<' escaped so no tag can close it."""
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@router.get(AUTHORIZE_PATH, response_class=HTMLResponse)
async def authorize_page(request: Request, ctx: Ctx,
                         to: Annotated[str | None, Query(max_length=MAX_HOST)] = None,
                         next: Annotated[str | None, Query(max_length=MAX_NEXT)] = None) -> Response:
    """Sign in (dev login and/or the identity provider), then POST /v1/access/authorize and follow
    its redirect. Errors of the link itself (bad `to`/`next`, unknown host) are shown at once."""
    settings = ctx.settings
    host = service.normalize_host(to)
    if host is None:
        return error_page(request, errors.BadHost("The link names no valid project hostname"), title="Bad link")
    if service.safe_next(next) is None:
        return error_page(request, errors.BadNext(), title="Bad link")
    async with ctx.db.transaction(write=False) as session:
        known = await service.is_routed(session, host)
    if not known:
        return error_page(request, errors.UnknownHostname(details={"host": host}), title="Unknown site")
    page_url = settings.public_url + AUTHORIZE_PATH
    provider = ctx.adapters.idp.name if ctx.adapters.idp is not None else None
    if provider is not None:
        try:
            check_redirect(page_url, settings.redirect_allowlist)
        except AppError:
            log.warning("authorize page: %s is not under SVC_IDP_REDIRECTS; identity-provider sign-in hidden",
                        page_url)
            provider = None
    config = {"devAuth": settings.enable_dev_auth, "provider": provider,
              "providerLabel": _PROVIDER_LABELS.get(provider or "", provider), "publicUrl": settings.public_url,
              "pageUrl": page_url}
    body = (f'<script id="svc-config" type="application/json">{_config_json(config)}</script>'
            + _AUTHORIZE_BODY)
    return _page(f"Sign in · {settings.service_name}", body, script=_AUTHORIZE_SCRIPT)
