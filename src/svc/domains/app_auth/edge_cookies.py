"""The cookies of end-user sign-in on a project's host. All host-only (no Domain attribute: a
sibling project's host never gets them), HttpOnly, SameSite=Lax (sent on the provider's top-level
redirect back), Secure when the edge serves https.

- svc_auth: the session token (its SHA-256 is the session's row in svc_auth.sessions), for the
  session's days.
- svc_auth_flow (path /__svc/auth/callback/): one sign-in's state, PKCE verifier, nonce, provider
  and where to go after, sealed with svc's keyring (AES-GCM bound to the host); 10 minutes. The
  callback must come back to the browser that started the sign-in, with the same state, once:
  the callback clears it.
- svc_auth_user: who is signed in, for the edge to give the worker (Svc-Auth-User) with no round
  trip (svc.kit.auth_cookie). Short-lived (USER_SECONDS), so a session ended elsewhere stops
  reaching the worker within that time; the edge renews it from the session (/__svc/auth/session)."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from starlette.responses import Response

from svc.adapters.edge.settings import edge_scheme
from svc.kit import auth_cookie
from svc.kit.crypto import Keyring
from svc.settings import Config

SESSION = "svc_auth"
FLOW = "svc_auth_flow"
USER = auth_cookie.NAME
FLOW_PATH = "/__svc/auth/callback/"
FLOW_SECONDS = 600
USER_SECONDS = 300
MAX_FLOW = 2048
_FLOW_CONTEXT = "svc_auth flow v1:"


def _secure(config: Config) -> bool:
    return edge_scheme(config) == "https"


def set_session(response: Response, token: str, seconds: int, config: Config) -> None:
    response.set_cookie(SESSION, token, max_age=max(seconds, 0), path="/", httponly=True, samesite="lax",
                        secure=_secure(config))


def clear(response: Response, config: Config) -> None:
    for name in (SESSION, USER):
        response.delete_cookie(name, path="/", httponly=True, samesite="lax", secure=_secure(config))


@dataclass(frozen=True)
class FlowCookie:
    provider: str
    state: str
    verifier: str
    nonce: str
    next_path: str
    expires: int


def seal_flow(keys: Keyring, host: str, flow: FlowCookie) -> str:
    raw = json.dumps(flow.__dict__, separators=(",", ":")).encode()
    sealed = keys.seal(raw, context=_FLOW_CONTEXT + host)
    return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode()


def open_flow(keys: Keyring, host: str, value: str | None, now: int) -> FlowCookie | None:
    """The flow of a genuine, unexpired cookie of this host; None for anything else."""
    if not value or len(value) > MAX_FLOW:
        return None
    try:
        sealed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        data = json.loads(keys.unseal(sealed, context=_FLOW_CONTEXT + host))
        flow = FlowCookie(**data)
    except (binascii.Error, ValueError, TypeError, KeyError, json.JSONDecodeError):
        return None
    except Exception:  # cryptography's InvalidTag: not sealed by this keyring for this host
        return None
    return flow if flow.expires > now else None


def set_flow(response: Response, value: str, config: Config) -> None:
    response.set_cookie(FLOW, value, max_age=FLOW_SECONDS, path=FLOW_PATH, httponly=True, samesite="lax",
                        secure=_secure(config))


def clear_flow(response: Response, config: Config) -> None:
    response.delete_cookie(FLOW, path=FLOW_PATH, httponly=True, samesite="lax", secure=_secure(config))


def set_user(response: Response, value: str, seconds: int, config: Config) -> None:
    response.set_cookie(USER, value, max_age=max(min(seconds, USER_SECONDS), 0), path="/", httponly=True,
                        samesite="lax", secure=_secure(config))
