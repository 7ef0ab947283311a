"""SQL for billing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from sqlalchemy import Table, bindparam, select, update

from svc.db import dialect_insert
from svc.kit.store_session import StoreSession
from svc.models import BillingAccount, BillingEvent, Org


async def account(session: StoreSession, org_id: str, *, lock: bool = False) -> BillingAccount | None:
    statement = select(BillingAccount).where(BillingAccount.org_id == org_id)
    if lock:
        statement = statement.with_for_update()
    return (await session.scalars(statement)).first()


_EVENTS = cast(Table, BillingEvent.__table__)
_ACCOUNTS = cast(Table, BillingAccount.__table__)
_ORGS = cast(Table, Org.__table__)
# The account's columns that follow the subscription (subscriptions.py).
ACCOUNT_STATE = ("subscription_id", "customer_id", "status", "current_period_end", "cancel_at_period_end",
                 "provider_modified_at", "subscriptions", "live_subscriptions")
# The webhook's statements are Core, one per kind for a whole batch of deliveries (webhooks.py). They
# go through the session as every statement does: on the transaction's connection instead a delivery
# cost 0.93-1.00x as much CPU on SQLite, 1.01-1.07x on PostgreSQL, within the rounds' noise
# (bench/store.py, billing.webhook, two runs), so this is not a hot path (docs/architecture.md, "The store").


async def lock_orgs(session: StoreSession, slugs: Iterable[str]) -> dict[str, tuple[str, str]]:
    """The orgs' ids and plans by slug, their rows held until the transaction ends (PostgreSQL, in
    slug order so that two writers never wait for each other in a circle; SQLite's writers are
    serial already): every write of an org's billing account holds its org first."""
    wanted = sorted(set(slugs))
    if not wanted:
        return {}
    found = await session.execute(select(_ORGS.c.slug, _ORGS.c.id, _ORGS.c.plan).where(_ORGS.c.slug.in_(wanted))
                                  .order_by(_ORGS.c.slug).with_for_update())
    return {slug: (org_id, plan) for slug, org_id, plan in found}


async def account_states(session: StoreSession, org_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The orgs' billing accounts as of now (read after their orgs' locks, so they are the latest)."""
    wanted = sorted(set(org_ids))
    if not wanted:
        return {}
    found = await session.execute(select(_ACCOUNTS.c.org_id, *(_ACCOUNTS.c[name] for name in ACCOUNT_STATE))
                                  .where(_ACCOUNTS.c.org_id.in_(wanted)))
    return {row.org_id: {name: row._mapping[name] for name in ACCOUNT_STATE} for row in found}


async def received(session: StoreSession, webhook_ids: Iterable[str]) -> set[str]:
    """Which of these deliveries the inbox holds already."""
    wanted = sorted(set(webhook_ids))
    if not wanted:
        return set()
    return set((await session.execute(select(_EVENTS.c.webhook_id).where(_EVENTS.c.webhook_id.in_(wanted)))).scalars())


async def add_events(session: StoreSession, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Inbox rows (webhook_id, type, received_at, outcome, detail, org_slug, payload), each made once:
    how many times each id has now been received (more than 1: another writer made it first)."""
    if not rows:
        return {}
    values = [{**row, "type": row["type"][:100], "detail": (row["detail"] or "")[:1000] or None,
               "org_slug": (row["org_slug"] or "")[:64] or None, "deliveries": 1} for row in rows]
    found = await session.execute(
        dialect_insert(session, _EVENTS).values(values)
        .on_conflict_do_update(index_elements=["webhook_id"], set_={"deliveries": _EVENTS.c.deliveries + 1})
        .returning(_EVENTS.c.webhook_id, _EVENTS.c.deliveries))
    return {webhook_id: count for webhook_id, count in found}


async def count_again(session: StoreSession, counts: dict[str, int]) -> None:
    """Redeliveries: counted on their rows, nothing else."""
    if not counts:
        return
    await session.execute(update(_EVENTS).where(_EVENTS.c.webhook_id == bindparam("id"))
                          .values(deliveries=_EVENTS.c.deliveries + bindparam("more")),
                          [{"id": webhook_id, "more": more} for webhook_id, more in counts.items()])


async def write_accounts(session: StoreSession, accounts: dict[str, dict[str, Any]], made: set[str]) -> None:
    """The accounts' new states by org (ACCOUNT_STATE's columns and updated_at); those of `made`
    are new rows."""
    changed = [{"org": org_id, **values} for org_id, values in accounts.items() if org_id not in made]
    if changed:
        columns = (*ACCOUNT_STATE, "updated_at")
        await session.execute(update(_ACCOUNTS).where(_ACCOUNTS.c.org_id == bindparam("org"))
                              .values({name: bindparam(name) for name in columns}), changed)
    for org_id in sorted(made & set(accounts)):
        slug = (await session.execute(select(_ORGS.c.slug).where(_ORGS.c.id == org_id))).scalar_one()
        values = accounts[org_id]
        await session.execute(_ACCOUNTS.insert().values(org_id=org_id, provider="polar", customer_external_id=slug,
                                                        created_at=values["updated_at"], **values))


async def event(session: StoreSession, webhook_id: str) -> BillingEvent | None:
    return await session.get(BillingEvent, webhook_id)


async def events(session: StoreSession, limit: int, outcome: str | None = None) -> list[BillingEvent]:
    statement = select(BillingEvent).order_by(BillingEvent.received_at.desc()).limit(limit)
    if outcome is not None:
        statement = statement.where(BillingEvent.outcome == outcome)
    return list((await session.scalars(statement)).all())


async def billed_orgs(session: StoreSession) -> list[str]:
    """The orgs that ever started a checkout (an account): those svc knows a customer of, and those
    whose payment svc never heard of (a lost webhook: the reconcile finds the customer by the org)."""
    return list((await session.scalars(select(BillingAccount.org_id))).all())


async def duplicates(session: StoreSession) -> list[tuple[str, BillingAccount]]:
    """The orgs paying for more than one live subscription (slug, account), for the operator."""
    found = await session.execute(select(Org.slug, BillingAccount).join(Org, Org.id == BillingAccount.org_id)
                                  .where(BillingAccount.live_subscriptions > 1).order_by(Org.slug))
    return [(slug, account) for slug, account in found.all()]


async def org_by_id(session: StoreSession, org_id: str) -> Org | None:
    return await session.get(Org, org_id)
