"""A `next` path a page may send the browser back to."""

from __future__ import annotations

import re

MAX_NEXT = 2048  # access_grants.next_path
_NEXT_CHARS = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII: no spaces or control characters


def safe_next(value: str | None) -> str | None:
    """A path (with query) on the same host, or None: it starts with exactly one '/', and holds no
    backslash, space or control character (a browser reads '//x' and '/\\x' as another host)."""
    if not value or len(value) > MAX_NEXT or not value.startswith("/") or not _NEXT_CHARS.match(value):
        return None
    if value.startswith("//") or "\\" in value:
        return None
    return value
