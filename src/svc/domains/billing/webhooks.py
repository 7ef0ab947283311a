"""The provider's webhooks, once verified (router.py): each delivery kept in the inbox
(billing_events) once by its webhook-id, and applied once (subscriptions.py's rules). A paid
one-time order (order.paid: AI credit bought) goes to the areas whose manifest says what orders
mean to them, in the same transaction.

Deliveries come in batches (deliveries.py writes those that arrive together in one transaction),
and a batch costs a handful of statements whatever its size: its orgs held, their accounts read,
the ids already received looked up, the inbox rows written, the accounts written. The deliveries
are then decided in the order they arrived, against the state as each left it.

A redelivery (an id the inbox holds) is counted on its row and changes nothing else. The org's
lock comes before the look-up, so a copy being written by another writer (another replica) is
found once that writer commits; a copy that another writer made while this one decided (possible
only for a delivery whose org could not be found there) is caught by the insert, and the batch is
undone (`Raced`) to be written again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from svc.adapters.billing.port import PaidOrder, Subscription, order_of, subscription_of
from svc.domains.billing import queries, subscriptions
from svc.kit.clock import utcnow
from svc.models import BillingEvent, Plan
from svc.uow import UnitOfWork

OUTCOMES = ("applied", "stale", "ignored", "failed")


@dataclass(frozen=True)
class Delivery:
    webhook_id: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """What became of a delivery, for its inbox row."""

    outcome: str
    detail: str
    org_slug: str | None = None


class Raced(RuntimeError):
    """Another writer kept one of the batch's deliveries while this one decided it."""


def _read(payload: dict[str, Any]) -> tuple[str, Subscription | PaidOrder | None, Outcome | None]:
    """The event's type and its subscription or paid order, or what becomes of a delivery svc does
    not act on."""
    event_type = str(payload.get("type") or "")
    data = payload.get("data")
    if event_type == "order.paid" and isinstance(data, dict):
        try:
            return event_type, order_of(data), None
        except (KeyError, ValueError) as exc:
            return event_type, None, Outcome("failed", f"the order cannot be read: {exc}")
    if not event_type.startswith("subscription.") or not isinstance(data, dict):
        return event_type, None, Outcome("ignored", f"svc does not act on {event_type or 'an event without a type'}")
    try:
        sub = subscription_of(data)
    except (KeyError, ValueError) as exc:
        return event_type, None, Outcome("failed", f"the subscription cannot be read: {exc}")
    slug = sub.org_slug or sub.customer_external_id
    if not slug:
        return event_type, None, Outcome("failed", "the event names no org")
    return event_type, sub, None


class _Batch:
    """The state a batch decides against: its orgs (held) and their accounts, as it changes them."""

    def __init__(self, held: dict[str, tuple[str, str]], accounts: dict[str, dict[str, Any]]) -> None:
        self.held = held
        self.accounts = accounts
        self.plans = {org_id: plan for org_id, plan in held.values()}
        self.made = {org_id for org_id, _ in held.values()} - set(accounts)
        self.written: dict[str, dict[str, Any]] = {}
        self.plan_changes: list[tuple[str, Plan, str]] = []

    def decide(self, event_type: str, sub: Subscription) -> tuple[bool, Outcome]:
        """Apply one delivery to the batch's state: whether it changes its org's plan, and its outcome."""
        slug = sub.org_slug or sub.customer_external_id or ""
        found = self.held.get(slug)
        if found is None:
            return False, Outcome("failed", f"no org {slug!r} on this svc", slug)
        org_id = found[0]
        values = subscriptions.followed(self.accounts.get(org_id), sub)
        if values is None:
            return False, Outcome("stale", "a newer state of this subscription was applied before", slug)
        self.accounts[org_id] = self.written[org_id] = {**self.accounts.get(org_id, {}), **values}
        # The org's live subscription decides, not this event's (it may be an old one's).
        plan = subscriptions.plan_for(values["status"])
        changed = plan != self.plans[org_id]
        if changed:
            self.plans[org_id] = plan
            self.plan_changes.append((org_id, plan, event_type))
        said = f"subscription {sub.id} is {sub.status}"
        if values["subscription_id"] != sub.id:
            said += f"; the org follows its subscription {values['subscription_id']} ({values['status']})"
        if values["live_subscriptions"] > 1:
            said += f"; {values['live_subscriptions']} subscriptions are live: the customer pays twice"
        return changed, Outcome("applied", said, slug)

    async def write(self, uow: UnitOfWork) -> None:
        await queries.write_accounts(uow.session, self.written, self.made)
        for org_id, plan, reason in self.plan_changes:
            org = await queries.org_by_id(uow.session, org_id)
            if org is not None:
                await subscriptions.set_plan(uow, org, plan, reason=reason)


async def _batch(uow: UnitOfWork, subs: Sequence[Subscription | PaidOrder | None]) -> _Batch:
    slugs = [sub.org_slug or sub.customer_external_id or "" for sub in subs if isinstance(sub, Subscription)]
    held = await queries.lock_orgs(uow.session, slugs)
    accounts = await queries.account_states(uow.session, [org_id for org_id, _ in held.values()])
    return _Batch(held, accounts)


async def receive_all(uow: UnitOfWork, deliveries: Sequence[Delivery]) -> list[bool]:
    """Verified deliveries, in the order they arrived: whether each changed a plan."""
    read = [_read(d.payload) for d in deliveries]
    batch = await _batch(uow, [sub for _, sub, _ in read])
    known = await queries.received(uow.session, [d.webhook_id for d in deliveries])
    now = utcnow()
    results: list[bool] = []
    rows: list[dict[str, Any]] = []
    again: dict[str, int] = {}
    for delivery, (event_type, sub, said) in zip(deliveries, read, strict=True):
        if delivery.webhook_id in known:
            again[delivery.webhook_id] = again.get(delivery.webhook_id, 0) + 1
            results.append(False)
            continue
        known.add(delivery.webhook_id)
        changed = False
        if isinstance(sub, Subscription):
            changed, said = batch.decide(event_type, sub)
        elif isinstance(sub, PaidOrder):
            said = await _paid(uow, sub)
        assert said is not None
        results.append(changed)
        rows.append({"webhook_id": delivery.webhook_id, "type": event_type, "received_at": now,
                     "outcome": said.outcome, "detail": said.detail, "org_slug": said.org_slug,
                     "payload": delivery.payload})
    counts = await queries.add_events(uow.session, rows)
    if any(count > 1 for count in counts.values()):
        raise Raced("a delivery of this batch was kept by another writer meanwhile")
    await queries.count_again(uow.session, again)
    await batch.write(uow)
    return results


async def replay(uow: UnitOfWork, webhook_id: str) -> BillingEvent | None:
    """Apply a kept delivery again; the row with its new outcome; None: no such id."""
    row = await queries.event(uow.session, webhook_id)
    if row is None:
        return None
    event_type, sub, said = _read(row.payload)
    if isinstance(sub, Subscription):
        batch = await _batch(uow, [sub])
        _, said = batch.decide(event_type, sub)
        await batch.write(uow)
    elif isinstance(sub, PaidOrder):
        said = await _paid(uow, sub)
    assert said is not None
    row.outcome, row.detail, row.org_slug = said.outcome, f"replayed: {said.detail}", said.org_slug
    return row


async def _paid(uow: UnitOfWork, order: PaidOrder) -> Outcome:
    """A paid order, to the area it is for (each applies its own once, by the order's id)."""
    for handler in uow.ctx.orders:
        found = await handler(uow, order)
        if found is not None:
            return Outcome(found[0], found[1], order.org_slug)
    return Outcome("ignored", f"order {order.id} is for nothing svc sells one-time", order.org_slug)
