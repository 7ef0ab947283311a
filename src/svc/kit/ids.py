"""Opaque, prefixed, time-sortable ids (prefix_ + 12 hex of ms time + 12 random base62)."""

from __future__ import annotations

import secrets
import time

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def random_base62(n: int) -> str:
    return "".join(secrets.choice(BASE62) for _ in range(n))


def new_id(prefix: str) -> str:
    return f"{prefix}_{int(time.time() * 1000):012x}{random_base62(12)}"
