"""The dashboard's browser session and its CSRF tokens.

The session is an ordinary svc session (identity.service.sign_in) whose token the browser keeps in
a cookie: HttpOnly (no script reads it), SameSite=Lax (no cross-site POST carries it), Secure and
`__Host-` prefixed when svc is served over https (a deployed project on a sibling host cannot set
it). The API never reads this cookie: it takes bearer tokens only, so the cookie cannot be used to
call it from another site.

CSRF: every form that changes something carries a token (a hidden `csrf` field, and the
`X-CSRF-Token` header on htmx and script requests) that is an HMAC, under the server's key, of the
session cookie (signed double submit). Before sign-in, the binding is a random `svc_pre` cookie
set by the sign-in page, so a sign-in form cannot be posted from another site either."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from fastapi import Request, Response

from svc.kit.clock import utcnow
from svc.kit.crypto import Keyring
from svc.settings import Settings

CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
PRE_SESSION_SECONDS = 3600


def _secure(settings: Settings) -> bool:
    return settings.public_url.startswith("https://")


def session_cookie_name(settings: Settings) -> str:
    return "__Host-svc_session" if _secure(settings) else "svc_session"


def pre_cookie_name(settings: Settings) -> str:
    return "__Host-svc_pre" if _secure(settings) else "svc_pre"


def session_token(request: Request, settings: Settings) -> str | None:
    value = request.cookies.get(session_cookie_name(settings))
    return value or None


def set_session(response: Response, settings: Settings, token: str, expires_at: datetime) -> None:
    max_age = max(0, int((expires_at - utcnow()).total_seconds()))
    response.set_cookie(session_cookie_name(settings), token, max_age=max_age, path="/", secure=_secure(settings),
                        httponly=True, samesite="lax")
    response.delete_cookie(pre_cookie_name(settings), path="/", secure=_secure(settings), httponly=True,
                           samesite="lax")


def clear_session(response: Response, settings: Settings) -> None:
    response.delete_cookie(session_cookie_name(settings), path="/", secure=_secure(settings), httponly=True,
                           samesite="lax")


def ensure_pre_session(request: Request, response: Response, settings: Settings) -> str:
    """The sign-in page's binding for its forms' CSRF token: kept if the browser has one."""
    value = request.cookies.get(pre_cookie_name(settings))
    if not value:
        value = secrets.token_urlsafe(24)
        response.set_cookie(pre_cookie_name(settings), value, max_age=PRE_SESSION_SECONDS, path="/",
                            secure=_secure(settings), httponly=True, samesite="lax")
    request.state.pre_session = value
    return value


def _binding(request: Request, settings: Settings) -> str | None:
    token = session_token(request, settings)
    if token:
        return "session:" + hashlib.sha256(token.encode()).hexdigest()
    pre: str | None = getattr(request.state, "pre_session", None) or request.cookies.get(pre_cookie_name(settings))
    return f"pre:{pre}" if pre else None


def csrf_token(request: Request, settings: Settings, keys: Keyring) -> str:
    binding = _binding(request, settings)
    return keys.sign("csrf " + binding) if binding else ""


def csrf_ok(request: Request, settings: Settings, keys: Keyring, sent: str | None) -> bool:
    binding = _binding(request, settings)
    return binding is not None and bool(sent) and keys.verify("csrf " + binding, sent or "")
