"""How long a test waits, said once: on a condition, never on the clock. A busy machine (load 12
on 2 cores) may make the suite slower, never red, so no test asserts how long something took or
gives up after a short fixed window; the bounds below only stop a test that would otherwise hang.

- WAIT_SECONDS: for something to happen (a delivery lands, a settlement is written, a log line
  arrives, a page renders);
- START_SECONDS: for a server to come up (`svc serve`, with its nginx, PowerDNS and workerd)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

WAIT_SECONDS = 90.0
START_SECONDS = 180.0
# The first polls come quickly (most conditions hold within milliseconds), later ones less often.
FIRST_POLL = 0.01
LAST_POLL = 0.25


async def until(predicate: Callable[[], Any], *, timeout: float = WAIT_SECONDS, what: str = "the condition") -> Any:
    """Poll `predicate` (plain or async) until it returns something truthy, and return that; an
    AssertionError naming `what` once `timeout` has passed. What the predicate raises goes up."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pause = FIRST_POLL
    while True:
        found = predicate()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found
        if loop.time() > deadline:
            raise AssertionError(f"{what}: still not so after {timeout:.0f} s")
        await asyncio.sleep(pause)
        pause = min(pause * 1.5, LAST_POLL)


def until_sync(predicate: Callable[[], Any], *, timeout: float = WAIT_SECONDS, what: str = "the condition") -> Any:
    """`until` for a test without an event loop (the CLI's, which run svc as a process)."""
    deadline = time.monotonic() + timeout
    pause = FIRST_POLL
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still not so after {timeout:.0f} s")
        time.sleep(pause)
        pause = min(pause * 1.5, LAST_POLL)
