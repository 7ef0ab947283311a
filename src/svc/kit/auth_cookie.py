"""svc_auth_user: who is signed in to a project's site (end-user auth, issue 48), in a cookie the
auth service issues and the edge checks with no round trip (lua/svc_auth.lua) before it gives the
user to the project's worker in the Svc-Auth-User header.

Value: base64url("v1|host|expiry|user JSON") "." base64url(HMAC-SHA1(key, that base64url text)).
HMAC-SHA1 because it is what nginx's Lua module computes natively (ngx.hmac_sha1); as a MAC it is
sound. The key is derived from svc's keyring (edge_key), so every replica's API and edge agree. The
host binds it to one site (a sibling host that plants one under a parent domain gets it refused);
the expiry keeps it short-lived, so a session ended elsewhere stops reaching the worker soon."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from svc.kit.crypto import Keyring

NAME = "svc_auth_user"
HEADER = "Svc-Auth-User"
_PURPOSE = "svc_auth edge key v1"


def edge_key(keys: Keyring) -> str:
    return keys.sign(_PURPOSE)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def issue(key: str, host: str, expires: int, user: dict[str, Any]) -> str:
    text = f"v1|{host}|{expires}|{json.dumps(user, separators=(',', ':'), ensure_ascii=True)}"
    payload = _b64(text.encode())
    return f"{payload}.{_b64(hmac.new(key.encode(), payload.encode(), hashlib.sha1).digest())}"
