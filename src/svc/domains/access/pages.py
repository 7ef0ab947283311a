"""The browser pages of access control: the password form and messages (served on project hosts
through the edge's /__svc/ paths) and the dashboard's authorize page (GET /access/authorize on the
svc API, the org login round trip). Built with svc.kit.pages."""

from __future__ import annotations

import html
from typing import Annotated

from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response

from svc.deps import Ctx, Uow, api_router
from svc.domains.access import errors, service
from svc.domains.identity.idp_service import provider_for_page
from svc.errors import AppError
from svc.kit.hosts import MAX_HOST, normalize_host
from svc.kit.pages import SIGNIN_SCRIPT, SIGNIN_SECTION, error_page, page, signin_config
from svc.kit.paths import MAX_NEXT, safe_next

router = api_router(include_in_schema=False)

AUTHORIZE_PATH = "/access/authorize"

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
    return page("Password required", body, status=status, headers=error.headers if error else None)


# --- the authorize page (dashboard side of the org login round trip) ---

_AUTHORIZE_SCRIPT = SIGNIN_SCRIPT + r"""
(function () {
  var $ = svc.$, params = new URLSearchParams(location.search);
  var to = params.get('to') || '', next = params.get('next') || '/';
  $('host').textContent = to;
  function problem(text, canSwitch) {
    $('problem-text').textContent = text;
    $('switch').hidden = !canSwitch;
    svc.show('problem');
  }
  function authorize(token) {
    svc.show('working');
    fetch('/v1/access/authorize', {
      method: 'POST',
      headers: {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + token},
      body: JSON.stringify({to: to, next: next})
    }).then(function (r) {
      return svc.json(r).then(function (body) {
        if (r.ok) { location.replace(body.redirect); return; }
        if (r.status === 401) {
          localStorage.removeItem('svc_token');
          svc.signin('Your session has ended: sign in again.');
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
  svc.start(authorize);
})();
"""

_AUTHORIZE_BODY = """
<h1>Sign in to continue</h1>
<p><strong id="host"></strong> is open to members of its org only.</p>
<section id="working"><p class="muted">Checking your access&hellip;</p></section>
""" + SIGNIN_SECTION + """
<section id="problem" hidden>
  <p id="problem-text" class="error" role="alert"></p>
  <p id="who" class="muted"></p>
  <button id="switch" class="secondary" type="button" hidden>Sign in as someone else</button>
</section>
"""


_PROVIDER_LABELS = {"github": "GitHub", "oidc": "single sign-on"}


@router.get(AUTHORIZE_PATH, response_class=HTMLResponse)
async def authorize_page(request: Request, uow: Uow, ctx: Ctx,
                         to: Annotated[str | None, Query(max_length=MAX_HOST)] = None,
                         next: Annotated[str | None, Query(max_length=MAX_NEXT)] = None) -> Response:
    """Sign in (dev login and/or the identity provider), then POST /v1/access/authorize and follow
    its redirect. Errors of the link itself (bad `to`/`next`, unknown host) are shown at once."""
    settings = ctx.settings
    host = normalize_host(to)
    if host is None:
        return error_page(request, errors.BadHost("The link names no valid project hostname"), title="Bad link")
    if safe_next(next) is None:
        return error_page(request, errors.BadNext(), title="Bad link")
    if not await service.is_routed(uow, host):
        return error_page(request, errors.UnknownHostname(details={"host": host}), title="Unknown site")
    page_url = settings.public_url + AUTHORIZE_PATH
    provider = provider_for_page(ctx, page_url)
    config = signin_config(dev_auth=settings.enable_dev_auth, provider=provider, public_url=settings.public_url,
                           page_url=page_url, sections=["working", "signin", "problem"])
    return page(f"Sign in · {settings.service_name}", config + _AUTHORIZE_BODY, script=_AUTHORIZE_SCRIPT)
