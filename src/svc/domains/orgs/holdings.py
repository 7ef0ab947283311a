"""What an org holds that blocks its deletion. Each area that owns org-scoped things (projects,
domains, repositories, DNS zones) registers a counter here, so org deletion needs no knowledge
of them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from svc.kit.store_session import StoreSession


@dataclass(frozen=True)
class Holding:
    count: int
    names: list[str]


HoldingCounter = Callable[[StoreSession, str], Awaitable[Holding]]

_COUNTERS: dict[str, HoldingCounter] = {}


def register(kind: str, counter: HoldingCounter) -> None:
    _COUNTERS[kind] = counter


async def holdings(session: StoreSession, org_id: str) -> dict[str, Holding]:
    found = {}
    for kind, counter in _COUNTERS.items():
        held = await counter(session, org_id)
        if held.count:
            found[kind] = held
    return found
