"""The `svc_access` cookie the edge checks: host-only, signed with the keyring.

Value: base64url("v2|project|host|mode|subject|generation|expiry") + "." + HMAC (Keyring.sign). It
is valid only for its project (by id: a project deleted and created again under the same name, or
in an org whose slug was reused, is another project), its host, the project's current access
generation and mode, and until its expiry (unix seconds). The subject is the user id in org mode (the
check re-reads the membership) and "-" in password mode."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime, timedelta

from starlette.responses import Response

from svc.adapters.edge.settings import edge_scheme
from svc.kit.crypto import Keyring
from svc.settings import Config

COOKIE_NAME = "svc_access"
COOKIE_TTL = timedelta(hours=12)
PASSWORD_SUBJECT = "-"
MAX_COOKIE = 1024
_PURPOSE = "svc_access v1:"


@dataclass(frozen=True)
class Claims:
    project: str  # the project's id
    host: str
    mode: str
    subject: str
    generation: int
    expires: int  # unix seconds


def issue(keys: Keyring, claims: Claims) -> str:
    text = "|".join(("v2", claims.project, claims.host, claims.mode, claims.subject, str(claims.generation),
                     str(claims.expires)))
    payload = base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
    return f"{payload}.{keys.sign(_PURPOSE + payload)}"


def read(keys: Keyring, value: str | None, now: datetime) -> Claims | None:
    """The claims of a genuine, unexpired cookie; None for anything else."""
    if not value or len(value) > MAX_COOKIE:
        return None
    payload, dot, signature = value.partition(".")
    if not dot or not keys.verify(_PURPOSE + payload, signature):
        return None
    try:
        text = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    except (binascii.Error, ValueError):
        return None
    parts = text.split("|")
    if len(parts) != 7 or parts[0] != "v2" or not parts[5].isdigit() or not parts[6].isdigit():
        return None
    claims = Claims(project=parts[1], host=parts[2], mode=parts[3], subject=parts[4], generation=int(parts[5]),
                    expires=int(parts[6]))
    if claims.expires <= int(now.timestamp()):
        return None
    return claims


def new_claims(*, project: str, host: str, mode: str, subject: str, generation: int, now: datetime) -> Claims:
    return Claims(project=project, host=host, mode=mode, subject=subject, generation=generation,
                  expires=int((now + COOKIE_TTL).timestamp()))


def set_access_cookie(response: Response, value: str, config: Config) -> None:
    """Host-only (no Domain attribute), so a cookie for one project never reaches another."""
    response.set_cookie(COOKIE_NAME, value, max_age=int(COOKIE_TTL.total_seconds()), path="/", httponly=True,
                        samesite="lax", secure=edge_scheme(config) == "https")
