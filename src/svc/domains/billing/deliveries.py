"""Verified webhook deliveries, written in batches: the deliveries that arrive while a write is on
wait for the next one, and go in together, in one transaction (a group commit). Each request is
answered once the transaction holding its delivery has committed, so an answered delivery is never
lost; a burst of deliveries costs one commit, not one each (bench/webhooks.py).

A batch that fails as a whole (a deadlock, a delivery that raises, a race: webhooks.Raced) is
written again one delivery per transaction, so one bad delivery fails alone: its request answers
500 and the provider delivers it again."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI

from svc.context import AppContext
from svc.domains.billing import service
from svc.domains.billing.webhooks import Delivery, Raced
from svc.uow import Tx, unit_of_work

log = logging.getLogger("svc.billing")

# Deliveries in one transaction at most: a burst is written in several, each soon answered.
MAX_BATCH = 64
# Batches written at once: while one waits for its commit, the next is written (PostgreSQL; on
# SQLite they take turns). Their orgs are held in one order, so they never wait in a circle.
WRITERS = 2


@dataclass
class _Waiting:
    webhook_id: str
    payload: dict[str, Any]
    answer: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class DeliveryWriter:
    """The process's writer of deliveries (one per app: `writer_of`)."""

    def __init__(self, ctx: AppContext) -> None:
        self._ctx = ctx
        self._waiting: list[_Waiting] = []
        self._writers: set[asyncio.Task[None]] = set()

    async def deliver(self, webhook_id: str, payload: dict[str, Any]) -> bool:
        """Keep and apply one verified delivery (webhooks.py); whether it changed a plan."""
        waiting = _Waiting(webhook_id, payload)
        self._waiting.append(waiting)
        if len(self._writers) < WRITERS:
            writer = asyncio.create_task(self._write())
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        # Shielded: a request given up by its client leaves its delivery in the batch.
        return await asyncio.shield(waiting.answer)

    async def _write(self) -> None:
        batch: list[_Waiting] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
                await self._write_batch(batch)
        except BaseException as exc:  # stopped (cancelled): nobody is left waiting for ever
            for waiting in batch + self._waiting:
                if not waiting.answer.done():
                    waiting.answer.set_exception(RuntimeError(f"the delivery was not written: {exc!r}"))
            self._waiting = []
            raise

    async def _write_batch(self, batch: list[_Waiting], *, again: bool = False) -> None:
        try:
            async with unit_of_work(self._ctx, Tx.WRITE) as uow:
                applied = await service.receive(uow, [Delivery(w.webhook_id, w.payload) for w in batch])
        except Exception as exc:
            if isinstance(exc, Raced) and not again:  # decided again, the other writer's row is found
                await self._write_batch(batch, again=True)
                return
            if len(batch) == 1:
                log.exception("billing webhook %s could not be written", batch[0].webhook_id)
                _settle(batch[0], exc)
                return
            log.warning("a batch of %d billing webhooks failed (%r): each is written alone", len(batch), exc)
            for waiting in batch:
                await self._write_batch([waiting])
            return
        for waiting, result in zip(batch, applied, strict=True):
            _settle(waiting, result)


def _settle(waiting: _Waiting, result: bool | Exception) -> None:
    if waiting.answer.done():
        return
    if isinstance(result, Exception):
        waiting.answer.set_exception(result)
    else:
        waiting.answer.set_result(result)


def writer_of(app: FastAPI, ctx: AppContext) -> DeliveryWriter:
    """The app's delivery writer, made at its first delivery."""
    writer: DeliveryWriter | None = getattr(app.state, "billing_deliveries", None)
    if writer is None:
        writer = app.state.billing_deliveries = DeliveryWriter(ctx)
    return writer
