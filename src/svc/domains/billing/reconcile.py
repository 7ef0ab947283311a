"""The reconcile: an org compared with the provider, the source of truth, and a drift repaired
(docs/billing.md). Webhooks get lost; a lost one must never leave a customer paying on the free
plan, or an org pro on a subscription that ended.

Two steps, the provider asked with nothing of the store held:

1. `at_provider`: the org's customer, found by the org's slug (the `external_id` checkout sets) when
   svc never heard its id (the first webhooks lost), and every subscription of that customer;
2. `repair`: with the org held, each subscription taken as the webhooks take it (per subscription,
   never an older state over a newer one), the plan set from the org's live subscription (any
   live one keeps it pro), and a duplicate (two live: the customer pays twice) reported.

The daily cycle (jobs.py) runs it for every org with an account; an operator runs it for one org
(`svc admin billing reconcile ORG`, the operator's billing page). A provider that cannot be asked
is an error in words, never "in step"."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from svc.adapters.billing.port import PRO_STATUSES, BillingProvider, BillingRejected, Subscription
from svc.adapters.billing.port import BillingUnavailable as ProviderUnavailable
from svc.adapters.billing.settings import BillingProviderSettings
from svc.domains.billing import errors, queries, subscriptions
from svc.domains.orgs import service as orgs
from svc.kit.clock import utcnow
from svc.models import BillingAccount
from svc.uow import UnitOfWork

log = logging.getLogger("svc.billing")

T = TypeVar("T")


@dataclass(frozen=True)
class AtProvider:
    """What the provider says of an org: its customer (None: nobody ever paid for it) and every
    subscription of that customer, newest first."""

    customer_id: str | None
    subscriptions: list[Subscription] = field(default_factory=list)

    @property
    def live(self) -> list[Subscription]:
        return [sub for sub in self.subscriptions if sub.status in PRO_STATUSES]


@dataclass(frozen=True)
class Reconciled:
    """An org after its reconcile: its plan, whether the reconcile changed what svc shows of it (the
    plan, the subscription's status or period, a scheduled cancel), and its live subscriptions (more
    than one: a duplicate, the customer pays twice)."""

    org_slug: str
    plan: str
    changed: bool
    customer_id: str | None
    live: tuple[str, ...] = ()

    @property
    def duplicate(self) -> bool:
        return len(self.live) > 1

    def words(self) -> str:
        said = (f"{self.org_slug}: repaired from the provider, on the {self.plan} plan (a webhook was missed)."
                if self.changed
                else f"{self.org_slug}: in step with the provider, still on the {self.plan} plan.")
        if self.customer_id is None:
            said += " The provider has no customer for this org (it never paid)."
        if self.duplicate:
            said += (f" It pays for {len(self.live)} live subscriptions ({', '.join(self.live)}): a duplicate, "
                     f"the customer is charged twice; cancel and refund one in the provider's dashboard.")
        return said


async def bounded(uow: UnitOfWork, request: Awaitable[T], undone: str = "nothing was compared with it") -> T:
    """A provider call, bounded: no answer, a failure or a refusal is 502 billing_unavailable in
    words (a reconcile never takes it for "nothing to repair")."""
    try:
        timeout = uow.ctx.settings_of(BillingProviderSettings).billing_timeout_seconds
        return await asyncio.wait_for(request, timeout=timeout)
    except TimeoutError:
        raise errors.BillingUnavailable(f"The billing provider did not answer in time: {undone}; try again "
                                        f"in a minute") from None
    except ProviderUnavailable as exc:
        raise errors.BillingUnavailable(f"The billing provider could not be asked ({exc}): {undone}; try "
                                        f"again in a minute") from None
    except BillingRejected as exc:
        raise errors.BillingUnavailable(f"The billing provider refused the request: {exc}") from None


async def at_provider(uow: UnitOfWork, billing: BillingProvider, external_id: str, customer_id: str | None,
                      undone: str = "nothing was compared with it") -> AtProvider:
    """The org's customer (found by its external id when svc does not know it) and its
    subscriptions. Nothing of the store may be held."""
    if customer_id is None:
        customer = await bounded(uow, billing.customer_of(external_id), undone)
        if customer is None:
            return AtProvider(None)
        customer_id = customer.id
    return AtProvider(customer_id, await bounded(uow, billing.subscriptions_of(customer_id), undone))


async def reconcile_org(uow: UnitOfWork, org_id: str) -> Reconciled | None:
    """Compare the org with the provider and repair a drift (in a READ_THEN_WRITE unit of work).
    None: no such org. BillingOff without a provider; BillingUnavailable when it cannot be asked."""
    billing = uow.ctx.adapters.billing
    if billing is None:
        reason = uow.ctx.adapters.off.get("billing")
        raise errors.BillingOff(f"Billing is {reason}: there is no provider to compare with" if reason else None)
    org = await queries.org_by_id(uow.session, org_id)
    if org is None:
        return None
    account = await queries.account(uow.session, org_id)
    external = account.customer_external_id if account is not None else org.slug
    known_customer = account.customer_id if account is not None else None
    await uow.close_reads()
    # The areas' own repairs first, each in its own units (AI credit: paid orders never credited).
    await uow.ctx.reconcile_areas(org_id)
    # Every provider read first (nothing of the store held), then one write with the org held.
    found = await at_provider(uow, billing, external, known_customer)
    await uow.begin_write()
    return await repair(uow, org_id, found, billing.name)


async def repair(uow: UnitOfWork, org_id: str, found: AtProvider, provider_name: str) -> Reconciled | None:
    """The org (held) takes what the provider said: each subscription as a webhook would give it,
    the plan from its live one. A repair is logged as one; a duplicate is reported."""
    org = await queries.org_by_id(uow.session, org_id)
    if org is None:
        return None
    await orgs.lock_org(uow, org.id)  # the org, then its account: the webhook's order too
    account = await queries.account(uow.session, org.id, lock=True)
    if account is None:
        if found.customer_id is None:
            return Reconciled(org.slug, org.plan, False, None)
        now = utcnow()
        account = BillingAccount(org_id=org.id, provider=provider_name, customer_external_id=org.slug,
                                 cancel_at_period_end=False, live_subscriptions=0, created_at=now, updated_at=now)
        uow.session.add(account)
    current = {name: getattr(account, name) for name in queries.ACCOUNT_STATE}
    held = subscriptions.known(current)
    for sub in reversed(found.subscriptions):  # oldest first: the newest live one is shown
        subscriptions.takes(held, sub)
    def shown() -> tuple[object, ...]:
        assert account is not None
        return org.plan, account.status, account.current_period_end, account.cancel_at_period_end

    before = shown()
    if held:
        for name, value in subscriptions.state(current, held, found.customer_id).items():
            setattr(account, name, value)
        await subscriptions.set_plan(uow, org, subscriptions.plan_for(account.status), reason="reconcile")
    elif found.customer_id is not None:
        account.customer_id = found.customer_id
    changed = shown() != before
    if changed:
        log.warning("billing reconcile repaired %s: plan, status, period end, cancel %s -> %s (a webhook was missed)",
                    org.slug, before, shown())
    lively = tuple(subscriptions.live(account.subscriptions or {}))
    if len(lively) > 1:
        log.warning("billing reconcile: %s pays for %d live subscriptions (%s): a duplicate, for the operator",
                    org.slug, len(lively), ", ".join(lively))
    return Reconciled(org.slug, org.plan, changed, account.customer_id, lively)
