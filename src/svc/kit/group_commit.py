"""A group commit: items submitted while a write is on wait for the next one and go in together, in
one transaction, and each submitter is answered once the transaction holding its item has
committed (an answered item is never lost; a burst costs one commit, not one each). A batch that
fails as a whole is written again one item per transaction, so one bad item fails alone.

Used where many small writes arrive at once from outside: the billing webhook's deliveries
(domains/billing/deliveries.py), the SMTP server's received messages (domains/email/inbound.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _Waiting(Generic[T, R]):
    item: T
    answer: asyncio.Future[R] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class GroupCommit(Generic[T, R]):
    """`write(batch)` writes the items in one transaction of its own and answers one result per
    item, in order. At most `max_batch` items a transaction, `writers` transactions at once (while
    one waits for its commit the next is written; on SQLite their writes take turns)."""

    def __init__(self, write: Callable[[list[T]], Awaitable[list[R]]], *, what: str, log: logging.Logger,
                 max_batch: int, writers: int = 2,
                 alone: Callable[[Exception], Exception] = lambda exc: exc,
                 again: Callable[[Exception], bool] = lambda exc: False) -> None:
        self._write_items = write
        self._what = what  # "billing webhooks", for the log's words
        self._log = log
        self._max_batch = max_batch
        self._writers_at_once = writers
        # What a submitter whose item failed alone is told (the error itself by default).
        self._alone = alone
        # Whether a batch that failed so is written once more whole before being split (a race
        # the next try decides).
        self._again = again
        self._waiting: list[_Waiting[T, R]] = []
        self._writers: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        waiting: _Waiting[T, R] = _Waiting(item)
        self._waiting.append(waiting)
        if len(self._writers) < self._writers_at_once:
            writer = asyncio.create_task(self._write())
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        # Shielded: a submitter that gives up (a request dropped, a session ended) leaves its item
        # in the batch; whoever sent it sends it again, and finds it written.
        return await asyncio.shield(waiting.answer)

    async def _write(self) -> None:
        batch: list[_Waiting[T, R]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:self._max_batch], self._waiting[self._max_batch:]
                await self._write_batch(batch)
        except BaseException as exc:  # stopped (cancelled): nobody is left waiting for ever
            for waiting in batch + self._waiting:
                if not waiting.answer.done():
                    waiting.answer.set_exception(RuntimeError(f"not written: {exc!r}"))
            self._waiting = []
            raise

    async def _write_batch(self, batch: list[_Waiting[T, R]], *, again: bool = False) -> None:
        try:
            results = await self._write_items([w.item for w in batch])
        except Exception as exc:
            if self._again(exc) and not again:
                await self._write_batch(batch, again=True)
                return
            if len(batch) == 1:
                self._log.warning("one of the %s could not be written: %r", self._what, exc, exc_info=True)
                if not batch[0].answer.done():
                    batch[0].answer.set_exception(self._alone(exc))
                return
            self._log.warning("a batch of %d %s failed (%r): each is written alone", len(batch), self._what, exc)
            for waiting in batch:
                await self._write_batch([waiting])
            return
        for waiting, result in zip(batch, results, strict=True):
            if not waiting.answer.done():
                waiting.answer.set_result(result)
