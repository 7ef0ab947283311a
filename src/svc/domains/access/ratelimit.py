"""A small in-process sliding-window limiter (per svc process) for the password page."""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable

MAX_KEYS = 10_000


class RateLimiter:
    def __init__(self, limit: int, window: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._hits: OrderedDict[Hashable, deque[float]] = OrderedDict()

    def retry_after(self, key: Hashable) -> int | None:
        """Seconds to wait when `key` used up its tries in the window; None when allowed (then the
        try is counted)."""
        now = self._clock()
        hits = self._hits.get(key)
        if hits is None:
            hits = deque()
            self._hits[key] = hits
            if len(self._hits) > MAX_KEYS:
                self._hits.popitem(last=False)
        self._hits.move_to_end(key)
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(1, math.ceil(hits[0] + self.window - now))
        hits.append(now)
        return None
