"""PostgreSQL's SCRAM-SHA-256 verifier of a password (RFC 5802 / RFC 7677, in the form
`pg_authid.rolpassword` stores): svc hands PostgreSQL the verifier, never the password."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

ITERATIONS = 4096  # PostgreSQL's own default (scram_iterations)


def verifier(password: str, *, salt: bytes | None = None, iterations: int = ITERATIONS) -> str:
    """`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` for this password. svc's own
    passwords are ASCII (token_urlsafe), which SASLprep leaves as they are."""
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", "sha256")

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def matches(stored: str | None, password: str) -> bool:
    """Whether `stored` (pg_authid.rolpassword: None, an md5 hash or a SCRAM verifier) is a SCRAM
    verifier of this password: StoredKey and ServerKey computed again with its salt and iteration
    count. A count above svc's own is refused unread: svc never makes one, and a verifier set by
    someone else could otherwise make this check spend minutes in PBKDF2."""
    try:
        method, rest = (stored or "").split("$", 1)
        count, salt, keys = rest.replace(":", "$", 1).split("$")
        iterations = int(count)
        if method != "SCRAM-SHA-256" or not 0 < iterations <= ITERATIONS:
            return False
        expected = verifier(password, salt=base64.b64decode(salt, validate=True), iterations=iterations)
    except ValueError:  # (binascii.Error is one)
        return False
    return hmac.compare_digest(expected.rsplit("$", 1)[1], keys)
