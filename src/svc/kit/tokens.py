"""Bearer secrets: generation, checksums and the hashes that are all we store."""

from __future__ import annotations

import hashlib
import secrets
import zlib

from svc.kit.ids import BASE62, random_base62

SESSION_PREFIX = "svc_ses_"
PAT_PREFIX = "svc_pat_"
PAT_BODY_LEN = 32
CHECKSUM_LEN = 6


def token_hash(token: str) -> str:
    """Tokens carry >= 190 bits of randomness, so a plain SHA-256 is a sound one-way store."""
    return hashlib.sha256(token.encode()).hexdigest()


def _base62(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 62)
        out.append(BASE62[r])
    return "".join(reversed(out))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), CHECKSUM_LEN)


def new_session_token() -> str:
    return SESSION_PREFIX + secrets.token_urlsafe(32)


def new_personal_access_token() -> str:
    """svc_pat_ + 32 random base62 + a 6-char base62 CRC32, so scanners can spot typos and leaks."""
    body = random_base62(PAT_BODY_LEN)
    return PAT_PREFIX + body + _checksum(body)


def pat_checksum_ok(token: str) -> bool:
    if not token.startswith(PAT_PREFIX):
        return False
    rest = token[len(PAT_PREFIX) :]
    if len(rest) != PAT_BODY_LEN + CHECKSUM_LEN:
        return False
    body, check = rest[:PAT_BODY_LEN], rest[PAT_BODY_LEN:]
    return secrets.compare_digest(_checksum(body), check)


def new_invite_token() -> str:
    """32 random bytes, URL-safe, never starting with "-": pasted after `svc invites accept`, a
    token that did would be read as an option (1 in 64 did)."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token
