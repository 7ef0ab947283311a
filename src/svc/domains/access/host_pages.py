"""The browser pages of access control served on project hosts through the edge's /__svc/ paths:
the password form and messages. Built with svc.kit.pages. (The org login round trip's page on svc,
/access/authorize, is the dashboard's: svc/web/pages/authorize.py.)"""

from __future__ import annotations

import html

from fastapi.responses import HTMLResponse

from svc.errors import AppError
from svc.kit.pages import page


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
