"""The invite link's page: GET /invites/{token}, where the invite mail points
({SVC_PUBLIC_URL}/invites/{token}). It shows the invite (org, role, state, expiry) without
sign-in; to accept, the person signs in (dev login or the identity provider) and presses Accept,
which calls POST /v1/invites/{token}/accept. The CLI's `svc invites accept <link>` does the same."""

from __future__ import annotations

import html

from fastapi import Request
from fastapi.responses import Response

from svc.deps import Ctx, Uow, api_router
from svc.domains.identity.idp_service import provider_for_page
from svc.domains.invites import errors, service
from svc.kit.clock import relative, utcnow
from svc.kit.pages import SIGNIN_SCRIPT, SIGNIN_SECTION, error_page, page, signin_config, time_tag

router = api_router(include_in_schema=False)

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_FINISHED = {
    "used": "This invite has already been accepted.",
    "revoked": "This invite was withdrawn.",
    "expired": "This invite has expired.",
}

_SCRIPT = SIGNIN_SCRIPT + r"""
(function () {
  var $ = svc.$, cfg = svc.cfg, token = null;
  function problem(text) { $('problem-text').textContent = text; svc.show('problem'); }
  function ready(t) {
    token = t;
    svc.show('ready');
    fetch('/v1/me', {headers: {'Authorization': 'Bearer ' + t}}).then(function (r) {
      if (r.status === 401) {
        localStorage.removeItem('svc_token');
        svc.signin('Your session has ended: sign in again.');
        return null;
      }
      return r.ok ? r.json() : null;
    }).then(function (me) {
      if (me && me.user) { $('who').textContent = 'Signed in as ' + me.user.subject + '.'; }
    }).catch(function () {});
  }
  $('accept').addEventListener('click', function () {
    svc.show('working');
    fetch(cfg.acceptPath, {method: 'POST', headers: {'Authorization': 'Bearer ' + token}}).then(function (r) {
      return svc.json(r).then(function (body) {
        if (r.ok) {
          $('done-text').textContent = body.alreadyMember
            ? 'You were already a member of ' + body.org.name + '; your role there stays ' + body.org.role + '.'
            : 'You joined ' + body.org.name + ' as ' + body.org.role + '.';
          svc.show('done');
        } else if (r.status === 401) {
          localStorage.removeItem('svc_token');
          svc.signin('Your session has ended: sign in again.');
        } else {
          problem(body.message || ('svc answered ' + r.status + '.'));
        }
      });
    }).catch(function () { problem('svc could not be reached: try again.'); });
  });
  svc.start(ready);
})();
"""

_SECTIONS = """
<section id="working" hidden><p class="muted">Working&hellip;</p></section>
""" + SIGNIN_SECTION + """
<section id="ready" hidden>
  <p id="who" class="muted"></p>
  <button id="accept" type="button">Accept the invite</button>
  <button id="switch" class="secondary" type="button">Sign in as someone else</button>
</section>
<section id="done" hidden><p id="done-text" role="status"></p></section>
<section id="problem" hidden><p id="problem-text" class="error" role="alert"></p></section>
"""


@router.get("/invites/{token}")
async def invite_page(request: Request, token: str, uow: Uow, ctx: Ctx) -> Response:
    settings = ctx.settings
    not_valid = errors.InviteNotFound("This invite link is not valid: check that it was copied whole")
    if not 1 <= len(token) <= 128 or not set(token) <= _TOKEN_CHARS:
        return error_page(request, not_valid, title="Invite not found")
    try:
        view = await service.preview(uow, token)
    except errors.InviteNotFound:
        return error_page(request, not_valid, title="Invite not found")
    org = html.escape(f"{view.org.name} ({view.org.slug})")
    title = f"Invite to {view.org.name} · {settings.service_name}"
    if view.state != "pending":
        when = ""
        if view.state == "expired":
            when = (f'<p class="muted">It expired {relative(view.expires_at, utcnow())}, on '
                    f"{time_tag(view.expires_at)}.</p>")
        body = (f"<h1>Invite to {org}</h1><p>{_FINISHED[view.state]}</p>{when}"
                f"<p>Ask an admin of {html.escape(view.org.slug)} to send you a new one.</p>")
        return page(title, body)
    link = f"{settings.public_url}/invites/{token}"
    page_url = link
    provider = provider_for_page(ctx, page_url)
    config = signin_config(dev_auth=settings.enable_dev_auth, provider=provider, public_url=settings.public_url,
                           page_url=page_url, sections=["working", "signin", "ready", "done", "problem"],
                           acceptPath=f"/v1/invites/{token}/accept")
    body = (f"{config}<h1>Join {org}</h1>"
            f"<p>You are invited to join the org {org} on {html.escape(settings.service_name)} "
            f"as <strong>{html.escape(view.role.value)}</strong>.</p>"
            f'<p class="muted">The link works once and expires {relative(view.expires_at, utcnow())}, on '
            f"{time_tag(view.expires_at)}.</p>"
            f"{_SECTIONS}"
            f'<p class="muted">Or in a terminal: <code>svc invites accept {html.escape(link)}</code></p>')
    return page(title, body, script=_SCRIPT)
