"""Work done in rounds: calls that arrive while a round runs are gathered into the next one, so many
concurrent callers cost one run of the work each round (group commit). Every caller returns once a
round that started after its call has finished, and gets that round's exception if it failed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Rounds(Generic[T]):
    """`await rounds(items)`: `work(all items gathered for the round)` has run, with these in it.
    `window`: how long a round waits for more callers before it starts (0: at once)."""

    def __init__(self, work: Callable[[set[T]], Awaitable[None]], *, window: float = 0.0) -> None:
        self._work = work
        self._window = window
        self._items: set[T] = set()
        self._next: asyncio.Future[None] | None = None
        self._runner: asyncio.Task[None] | None = None

    async def __call__(self, items: Iterable[T] = ()) -> None:
        self._items.update(items)
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
            # Read even when every caller was cancelled: no "exception never retrieved".
            self._next.add_done_callback(lambda f: f.cancelled() or f.exception())
        round_done = self._next
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run(), name="svc-rounds")
        await asyncio.shield(round_done)

    async def _run(self) -> None:
        while self._next is not None:
            if self._window > 0:
                await asyncio.sleep(self._window)
            round_done, items = self._next, self._items
            self._next, self._items = None, set()
            try:
                await self._work(items)
            except asyncio.CancelledError:
                round_done.cancel()
                raise
            except Exception as exc:
                round_done.set_exception(exc)
            else:
                round_done.set_result(None)

    async def close(self) -> None:
        """Stop: the running round is cancelled, and so are its callers and the next round's."""
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
        if self._next is not None:
            self._next.cancel()
            self._next = None
