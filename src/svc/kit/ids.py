"""Opaque, prefixed, time-sortable ids (prefix_ + 12 hex of ms time + 12 random base62)."""

from __future__ import annotations

import secrets
import time

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def random_base62(n: int) -> str:
    return "".join(secrets.choice(BASE62) for _ in range(n))


def new_id(prefix: str) -> str:
    return f"{prefix}_{int(time.time() * 1000):012x}{random_base62(12)}"


def short_request_id(request_id: str) -> str:
    """What `svc logs` and the dashboard's Logs tab show of a request id. The edge's ids are
    `<start>-<worker pid>-<connection>-<request on it>` (edge/config.py request_id), and every
    request of one edge start shares `<start>`: shown is the rest, the part that tells requests
    apart (`4821-17-1`). An id of another shape is shown whole. `?request=` takes either form
    (workers' queries.lines: the whole id, or what follows a dash in it)."""
    _, dash, rest = request_id.partition("-")
    return rest if dash and rest else request_id
