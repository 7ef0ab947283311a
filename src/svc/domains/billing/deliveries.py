"""Verified webhook deliveries, written in batches: the deliveries that arrive while a write is on
wait for the next one, and go in together, in one transaction (a group commit). Each request is
answered once the transaction holding its delivery has committed, so an answered delivery is never
lost; a burst of deliveries costs one commit, not one each (bench/webhooks.py).

A batch that fails as a whole (a deadlock, a delivery that raises, a race: webhooks.Raced) is
written again one delivery per transaction, so one bad delivery fails alone: its request answers
500 and the provider delivers it again."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI

from svc.context import AppContext
from svc.domains.billing import service
from svc.domains.billing.webhooks import Delivery, Raced
from svc.kit.group_commit import GroupCommit
from svc.uow import Tx, unit_of_work

log = logging.getLogger("svc.billing")

# Deliveries in one transaction at most: a burst is written in several, each soon answered. Two
# batches are written at once; their orgs are held in one order, so they never wait in a circle.
MAX_BATCH = 64


class DeliveryWriter:
    """The process's writer of deliveries (one per app: `writer_of`)."""

    def __init__(self, ctx: AppContext) -> None:
        self._ctx = ctx
        # A race (webhooks.Raced) is decided again whole: the other writer's row is found then.
        self._batches: GroupCommit[Delivery, bool] = GroupCommit(
            self._write, what="billing webhooks", log=log, max_batch=MAX_BATCH,
            again=lambda exc: isinstance(exc, Raced))

    async def deliver(self, webhook_id: str, payload: dict[str, Any]) -> bool:
        """Keep and apply one verified delivery (webhooks.py); whether it changed a plan."""
        return await self._batches.submit(Delivery(webhook_id, payload))

    async def _write(self, batch: list[Delivery]) -> list[bool]:
        async with unit_of_work(self._ctx, Tx.WRITE) as uow:
            return await service.receive(uow, batch)


def writer_of(app: FastAPI, ctx: AppContext) -> DeliveryWriter:
    """The app's delivery writer, made at its first delivery."""
    writer: DeliveryWriter | None = getattr(app.state, "billing_deliveries", None)
    if writer is None:
        writer = app.state.billing_deliveries = DeliveryWriter(ctx)
    return writer
