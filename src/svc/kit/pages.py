"""The few browser pages the API serves itself (a project's password form, the org login round
trip, an invite link): small self-contained HTML, no external assets, inline style and script
allowed only by a per-response CSP nonce, and one sign-in widget they share."""

from __future__ import annotations

import html
import json
import secrets
from datetime import datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from svc.errors import AppError, error_response
from svc.kit.clock import human_date, rfc3339

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
         headers: dict[str, str] | None = None) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    script_tag = f'<script nonce="{nonce}">{script}</script>' if script else ""
    document = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
                f'<meta name="viewport" content="width=device-width,initial-scale=1">'
                f'<meta name="robots" content="noindex"><title>{html.escape(title)}</title>'
                f'<style nonce="{nonce}">{STYLE}</style></head><body><main>{body}</main>{script_tag}</body></html>')
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
    return page(title, body, status=err.status, headers=err.headers)


def time_tag(when: datetime) -> str:
    """<time> with the RFC 3339 instant for machines and the human date for people."""
    return f'<time datetime="{rfc3339(when)}">{human_date(when)}</time>'


def config_json(data: dict[str, Any]) -> str:
    """JSON for a <script type="application/json"> block: '<' escaped so no tag can close it."""
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# --- sign-in: dev login and/or the identity provider, the session token kept in localStorage ---

PROVIDER_LABELS = {"github": "GitHub", "oidc": "single sign-on"}

SIGNIN_SECTION = """
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
"""

# Defines `svc`: the page's config (the <script id="svc-config"> block, see signin_config), `$`,
# `show(section)` among cfg.sections, `signin(note)`, `json(response)`, and `start(act)`: sign in
# if needed (a token from the identity provider arrives in the URL fragment), then act(token).
SIGNIN_SCRIPT = r"""
var svc = (function () {
  var cfg = JSON.parse(document.getElementById('svc-config').textContent);
  function $(id) { return document.getElementById(id); }
  function show(id) { cfg.sections.forEach(function (s) { $(s).hidden = s !== id; }); }
  function signin(note) {
    $('signin-note').textContent = note || '';
    $('signin-note').hidden = !note;
    show('signin');
  }
  function json(r) { return r.json().catch(function () { return {}; }); }
  function start(act) {
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
            act(body.token);
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
    if ($('switch')) {  // "Sign in as someone else", where the page offers it
      $('switch').addEventListener('click', function () {
        localStorage.removeItem('svc_token');
        if ($('who')) { $('who').textContent = ''; }
        signin('');
      });
    }
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
    if (token) { act(token); } else { signin(''); }
  }
  return {cfg: cfg, $: $, show: show, signin: signin, json: json, start: start};
})();
"""


def signin_config(*, dev_auth: bool, provider: str | None, public_url: str, page_url: str,
                  sections: list[str], **extra: Any) -> str:
    """The <script id="svc-config"> block SIGNIN_SCRIPT reads. `provider`: None to hide the
    identity provider (none configured, or page_url not an allowed redirect)."""
    config = {"devAuth": dev_auth, "provider": provider, "providerLabel": PROVIDER_LABELS.get(provider or "", provider),
              "publicUrl": public_url, "pageUrl": page_url, "sections": sections, **extra}
    return f'<script id="svc-config" type="application/json">{config_json(config)}</script>'
