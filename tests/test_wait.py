"""tests/support/wait.py: `until` answers what the condition returned once it holds (plain or async),
and names what it waited for when its bound has passed, instead of hanging."""

from __future__ import annotations

import pytest

from tests.support.wait import START_SECONDS, WAIT_SECONDS, until, until_sync


async def test_until_returns_what_the_condition_returned() -> None:
    calls: list[int] = []

    def third() -> list[int] | None:
        calls.append(1)
        return calls if len(calls) >= 3 else None

    async def at_once() -> str:
        return "yes"

    assert await until(third) == [1, 1, 1]
    assert await until(at_once) == "yes"
    assert until_sync(lambda: 42) == 42


async def test_until_names_what_never_came_once_its_bound_has_passed() -> None:
    with pytest.raises(AssertionError, match="the impossible: still not so"):
        await until(lambda: False, timeout=0.05, what="the impossible")
    with pytest.raises(AssertionError, match="the impossible: still not so"):
        until_sync(lambda: 0, timeout=0.05, what="the impossible")


def test_the_bounds_are_generous() -> None:
    assert WAIT_SECONDS >= 90 and START_SECONDS >= WAIT_SECONDS
