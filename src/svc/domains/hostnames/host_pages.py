"""The public page of a pending custom hostname, which the edge shows browsers in place of the
project (nginx proxies them to /v1/edge/pending-host): which record is missing, and what the last
check saw. Built with svc.kit.pages; the verification value is not on it (the page is public: the
owner reads it in the dashboard or with `svc hostnames list`)."""

from __future__ import annotations

import html

from fastapi.responses import HTMLResponse

from svc.domains.hostnames.service import PendingHost
from svc.kit.pages import page


def pending_page(found: PendingHost, *, service_name: str) -> HTMLResponse:
    host = html.escape(found.host)
    seen = (f'<p class="error" role="status">Last check: {html.escape(found.last_error)}</p>'
            if found.last_error else '<p class="muted">The first check has not run yet.</p>')
    body = (f"<h1>This hostname is not connected yet</h1>"
            f'<p class="muted">{host}</p>'
            f"<p>{html.escape(service_name)} serves <strong>{host}</strong> once its owner proves control of "
            f"its DNS. One of these records is missing at the DNS provider of this name:</p>"
            f"<ul><li>a <strong>TXT</strong> record named <code>{html.escape(found.txt_name)}</code> holding the "
            f"value shown in the project's hostnames (the dashboard, or <code>svc hostnames list</code>), or</li>"
            f"<li>a <strong>CNAME</strong> record on <code>{host}</code> pointing to "
            f"<code>{html.escape(found.cname_target)}</code>.</li></ul>"
            f"{seen}"
            f'<p class="muted">Checks run every minute; <code>svc hostnames verify {host}</code> runs one now.</p>')
    return page("Hostname not connected yet", body, status=404)
