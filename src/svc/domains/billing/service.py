"""Billing rules (docs/billing.md). Services flush, never commit.

Only the provider's webhook changes an org's plan, following the spec's state table: a subscription
whose status is active, trialing or past_due makes the org pro, any other status makes it free.
Every delivery is kept in the inbox (billing_events) by its webhook-id, so a redelivery is applied
once. Events arrive late and out of order: an event older than the newest one applied (the
subscription's own modified time) changes nothing and is kept as `stale`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from svc.adapters.billing.port import (
    BillingProvider,
    BillingRejected,
    NoSuchCustomer,
)
from svc.adapters.billing.port import BillingUnavailable as ProviderUnavailable
from svc.auth.roles import OrgAccess
from svc.domains.audit.service import record
from svc.domains.billing import errors, queries, subscriptions, webhooks
from svc.domains.billing.schemas import BillingStatus, PlanLimitsView
from svc.domains.orgs import service as orgs
from svc.kit import urls
from svc.kit.clock import utcnow
from svc.models import BillingAccount, BillingEvent, Org, Plan
from svc.settings import Settings
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.billing")


def provider(uow: UnitOfWork) -> BillingProvider:
    found = uow.ctx.adapters.billing
    if found is None:
        raise errors.BillingOff()
    return found


async def call(uow: UnitOfWork, request: Any) -> Any:
    """A provider call, bounded: no answer in time (or a failure) is 502 billing_unavailable."""
    try:
        return await asyncio.wait_for(request, timeout=uow.ctx.settings.billing_timeout_seconds)
    except (TimeoutError, ProviderUnavailable) as exc:
        log.warning("billing provider: %s", exc or "no answer in time")
        raise errors.BillingUnavailable() from None
    except NoSuchCustomer:
        raise errors.NoBillingHistory() from None
    except BillingRejected as exc:
        log.warning("billing provider refused: %s", exc)
        raise errors.BillingUnavailable(f"The billing provider refused the request: {exc}") from None


# --- what people see and do ---


def status_view(org: Org, account: BillingAccount | None, settings: Settings, *, enabled: bool,
                sandbox: bool) -> BillingStatus:
    pro = org.plan == Plan.pro
    limits = {name: PlanLimitsView(projects=lim.projects, storage_bytes=lim.storage_bytes,
                                   mail_per_hour=lim.mail_per_hour, ai_max_output_tokens=lim.ai_max_output_tokens)
              for name, lim in orgs.every_plan(settings).items()}
    return BillingStatus(plan=Plan.pro if pro else Plan.free,
                         status=account.status if pro and account is not None else None,
                         period_end=account.current_period_end if account is not None and pro else None,
                         cancel_at_period_end=bool(account and pro and account.cancel_at_period_end),
                         enabled=enabled, sandbox=sandbox, limits=limits)


async def status(uow: UnitOfWork, access: OrgAccess) -> BillingStatus:
    found = uow.ctx.adapters.billing
    account = await queries.account(uow.session, access.org.id)
    return status_view(access.org, account, uow.ctx.settings, enabled=found is not None,
                       sandbox=bool(found and found.sandbox))


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def checkout(uow: UnitOfWork, access: OrgAccess, return_to: str) -> str:
    """The provider's checkout page for the pro plan (the plan changes with its webhook only)."""
    settings = uow.ctx.settings
    if not urls.under(return_to, settings.public_url):
        raise errors.ReturnToNotAllowed.of_field("returnTo", f"must be under {settings.public_url}")
    billing = provider(uow)
    org = access.org
    if org.plan == Plan.pro:
        raise errors.AlreadyPro()
    email = access.principal.user.email if access.principal.user is not None else None
    await uow.close_reads()
    made = await call(uow, billing.checkout(org_slug=org.slug, email=email, success_url=return_to))
    await uow.begin_write()
    await orgs.lock_org(uow, org.id)  # the org, then its account: the webhook's order too
    account = await queries.account(uow.session, org.id, lock=True)
    if account is None:
        now = utcnow()
        uow.session.add(BillingAccount(org_id=org.id, provider=billing.name, customer_external_id=org.slug,
                                       cancel_at_period_end=False, created_at=now, updated_at=now))
    await record(uow.session, "billing.checkout", actor=access.principal.user, org=org, target=org.slug)
    return str(made.url)


async def _paid_account(uow: UnitOfWork, org: Org) -> BillingAccount:
    account = await queries.account(uow.session, org.id)
    if account is None or account.customer_id is None:
        raise errors.NoBillingHistory()
    return account


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def portal(uow: UnitOfWork, access: OrgAccess, return_to: str | None) -> str:
    settings = uow.ctx.settings
    if return_to is not None and not urls.under(return_to, settings.public_url):
        raise errors.ReturnToNotAllowed.of_field("returnTo", f"must be under {settings.public_url}")
    billing = provider(uow)
    account = await _paid_account(uow, access.org)
    external = account.customer_external_id
    await uow.close_reads()
    session = await call(uow, billing.customer_session(external_id=external, return_url=return_to))
    return str(session.portal_url)


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def customer_session(uow: UnitOfWork, access: OrgAccess) -> tuple[str, datetime]:
    billing = provider(uow)
    account = await _paid_account(uow, access.org)
    external = account.customer_external_id
    await uow.close_reads()
    session = await call(uow, billing.customer_session(external_id=external, return_url=None))
    return session.token, session.expires_at


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def cancel(uow: UnitOfWork, access: OrgAccess, cancel_: bool) -> BillingStatus:
    """Schedule the end at the period's end (True) or reverse it (False): the row says so at once;
    the provider's webhooks follow."""
    billing = provider(uow)
    org = access.org
    account = await queries.account(uow.session, org.id)
    if org.plan != Plan.pro or account is None or account.subscription_id is None:
        raise errors.NotPro()
    subscription_id = account.subscription_id
    await uow.close_reads()
    sub = await call(uow, billing.set_cancel(subscription_id, cancel_))
    await uow.begin_write()
    await orgs.lock_org(uow, org.id)  # the org, then its account: the webhook's order too
    account = await queries.account(uow.session, org.id, lock=True)
    if account is not None:
        subscriptions.follow(account, sub)
    await record(uow.session, "billing.cancel" if cancel_ else "billing.resume", actor=access.principal.user,
                 org=org, target=org.slug)
    return status_view(org, account, uow.ctx.settings, enabled=True, sandbox=billing.sandbox)


# --- repairs (operators: svc admin billing) ---


OUTCOMES = webhooks.OUTCOMES


async def receive(uow: UnitOfWork, deliveries: Sequence[webhooks.Delivery]) -> list[bool]:
    """Verified webhook deliveries, in the order they arrived (webhooks.py): whether each changed
    a plan."""
    return await webhooks.receive_all(uow, deliveries)


async def inbox(uow: UnitOfWork, limit: int = 50, outcome: str | None = None) -> list[BillingEvent]:
    """The newest deliveries (of one outcome), for an operator (svc admin billing events, the
    operator's billing page)."""
    return await queries.events(uow.session, limit, outcome if outcome in OUTCOMES else None)


@use_case(Tx.WRITE)
async def replay(uow: UnitOfWork, webhook_id: str) -> BillingEvent | None:
    """Apply a kept delivery again (one that failed, say, because its org came later); the same
    rules hold (an older state never wins). The row with its new outcome; None: no such id."""
    return await webhooks.replay(uow, webhook_id)


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def reconcile_slug(uow: UnitOfWork, slug: str) -> tuple[bool, str] | None:
    """An operator's reconcile of one org, now: whether its plan changed, and the plan it is on;
    None when there is no such org."""
    found = await orgs.org_by_slug(uow, slug)
    if found is None:
        return None
    changed = await reconcile_org(uow, found.id)
    return changed, (await queries.org_by_id(uow.session, found.id) or found).plan


async def reconcile_org(uow: UnitOfWork, org_id: str) -> bool:
    """Compare the org's subscription with the provider's (its newest) and repair a drift: the
    provider is the source of truth. Whether the plan changed. Logged as a repair when it did."""
    await uow.ctx.reconcile_areas(org_id)  # the areas' own repairs first (AI credit: paid orders never credited)
    billing = uow.ctx.adapters.billing
    account = await queries.account(uow.session, org_id)
    if billing is None or account is None or account.customer_id is None:
        return False
    external = account.customer_external_id
    await uow.close_reads()
    try:
        subs = await asyncio.wait_for(billing.subscriptions_of(external),
                                      timeout=uow.ctx.settings.billing_timeout_seconds)
    except (TimeoutError, ProviderUnavailable, BillingRejected) as exc:
        log.warning("billing reconcile of %s: the provider did not answer (%s); next cycle", external, exc)
        return False
    await uow.begin_write()
    org = await queries.org_by_id(uow.session, org_id)
    if org is None or not subs:
        return False
    await orgs.lock_org(uow, org.id)
    account = await queries.account(uow.session, org_id, lock=True)
    if account is None:
        return False
    newest = subs[0]
    before = (org.plan, account.status)
    subscriptions.follow(account, newest)
    changed = await subscriptions.set_plan(uow, org, subscriptions.plan_for(account.status),
                              reason="reconcile")
    if changed or before[1] != account.status:
        log.warning("billing reconcile repaired %s: plan %s -> %s, status %s -> %s (a webhook was missed)",
                    org.slug, before[0], org.plan, before[1], account.status)
    return changed
