"""Rounds: concurrent callers share a run of the work; a caller returns only once a round that
started after its call has finished, and gets that round's failure."""

from __future__ import annotations

import asyncio

import pytest

from svc.kit.rounds import Rounds


async def test_callers_are_gathered_and_late_ones_wait_for_the_next_round() -> None:
    runs: list[set[int]] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def work(items: set[int]) -> None:
        runs.append(set(items))
        if len(runs) == 1:
            started.set()
            await release.wait()

    rounds: Rounds[int] = Rounds(work)
    first = asyncio.create_task(rounds([1]))
    await started.wait()
    assert runs == [{1}]  # running, held
    # Arriving while round 1 runs: gathered into round 2, which starts once round 1 ends.
    later = [asyncio.create_task(rounds([n])) for n in (2, 3, 4)]
    await asyncio.sleep(0)
    assert not first.done() and runs == [{1}]
    release.set()
    await asyncio.gather(first, *later)
    assert runs == [{1}, {2, 3, 4}]
    await rounds([5])
    assert runs[-1] == {5}


async def test_a_failed_round_fails_its_callers_only() -> None:
    async def work(items: set[str]) -> None:
        if "bad" in items:
            raise ValueError("refused")

    rounds: Rounds[str] = Rounds(work)
    with pytest.raises(ValueError, match="refused"):
        await asyncio.gather(rounds(["bad"]), rounds(["good"]))
    await rounds(["good"])  # the next round runs as usual


async def test_close_cancels_whoever_waits() -> None:
    started = asyncio.Event()

    async def work(items: set[int]) -> None:
        started.set()
        await asyncio.Event().wait()

    rounds: Rounds[int] = Rounds(work)
    waiting = asyncio.create_task(rounds([1]))
    await started.wait()
    await rounds.close()
    with pytest.raises(asyncio.CancelledError):
        await waiting
