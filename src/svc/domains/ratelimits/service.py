"""Count a try against one or more limits, for every svc process sharing the store.

A sliding window, approximated from two fixed windows (as Cloudflare's limiter does): the current
window's count plus the previous window's, weighted by how much of it still overlaps the last
`window` seconds. Refused tries count too, so a client that keeps trying stays refused.

Each try is its own unit of work: it must be counted whether the use case around it succeeds or
not (a wrong password answers with an error, which would roll back a count made inside it)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from svc.context import AppContext
from svc.domains.ratelimits import queries
from svc.kit.clock import utcnow
from svc.uow import Tx, unit_of_work

# The longest window a limit may have (the housekeeping below relies on it).
LONGEST_WINDOW = 24 * 3600


@dataclass(frozen=True)
class Limit:
    """At most `tries` in any `window` seconds for `key` (any text: only its digest is stored)."""

    key: str
    tries: int
    window: int

    def __post_init__(self) -> None:
        if not 0 < self.window <= LONGEST_WINDOW:
            raise ValueError(f"a rate limit's window is 1 to {LONGEST_WINDOW} seconds")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


async def hit(ctx: AppContext, limits: list[Limit]) -> int | None:
    """Count one try against each limit. None when every limit allows it; else the seconds to
    wait until the most restrictive one does."""
    now = utcnow().timestamp()
    wait: int | None = None
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        session = uow.session
        for limit in limits:
            start = int(now // limit.window) * limit.window
            key = _digest(limit.key)
            current = await queries.increment(session, key, start)
            previous = await queries.count(session, key, start - limit.window)
            overlap = 1.0 - (now - start) / limit.window
            if previous * overlap + current > limit.tries:
                seconds = _until_allowed(current, previous, limit, now - start)
                wait = seconds if wait is None else max(wait, seconds)
        # Housekeeping: no limit's window is longer than LONGEST_WINDOW, so older counters of any key
        # can never count again.
        await queries.forget_before(session, int(now) - 2 * LONGEST_WINDOW)
    return wait


def _until_allowed(current: int, previous: int, limit: Limit, elapsed: float) -> int:
    """Seconds until the weighted count falls to the limit again, told as at most one window: the
    approximation can put it a little later (a count fading in the next window), and a client that
    comes back then is simply told again."""
    if current <= limit.tries and previous > 0:
        # previous * (1 - e/W) + current <= tries  <=>  e >= W * (1 - (tries - current) / previous)
        seconds = limit.window * (1 - (limit.tries - current) / previous) - elapsed
    else:
        # Into the next window, where this window's count fades from `current`.
        seconds = limit.window - elapsed + limit.window * max(0.0, 1 - limit.tries / current)
    return min(limit.window, max(1, math.ceil(seconds)))
