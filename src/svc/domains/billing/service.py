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
from svc.adapters.billing.settings import BillingProviderSettings
from svc.auth.roles import OrgAccess
from svc.context import Unsettled
from svc.domains.audit.service import record
from svc.domains.billing import errors, queries, reconcile, subscriptions, webhooks
from svc.domains.billing.kinds import BillingJob
from svc.domains.billing.schemas import BillingStatus, PlanLimitsView
from svc.domains.orgs import service as orgs
from svc.kit import urls
from svc.kit.clock import rfc3339, utcnow
from svc.models import BillingAccount, BillingEvent, Org, Plan
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

log = logging.getLogger("svc.billing")


def provider(uow: UnitOfWork) -> BillingProvider:
    found = uow.ctx.adapters.billing
    if found is None:
        raise errors.BillingOff()
    return found


async def call(uow: UnitOfWork, request: Any) -> Any:
    """A provider call, bounded: no answer in time (or a failure) is 502 billing_unavailable."""
    try:
        timeout = uow.ctx.settings_of(BillingProviderSettings).billing_timeout_seconds
        return await asyncio.wait_for(request, timeout=timeout)
    except (TimeoutError, ProviderUnavailable) as exc:
        log.warning("billing provider: %s", exc or "no answer in time")
        raise errors.BillingUnavailable() from None
    except NoSuchCustomer:
        raise errors.NoBillingHistory() from None
    except BillingRejected as exc:
        log.warning("billing provider refused: %s", exc)
        raise errors.BillingUnavailable(f"The billing provider refused the request: {exc}") from None


# --- what people see and do ---


def status_view(org: Org, account: BillingAccount | None, config: Config, *, enabled: bool,
                sandbox: bool) -> BillingStatus:
    pro = org.plan == Plan.pro
    limits = {name: PlanLimitsView(projects=lim.projects, storage_bytes=lim.storage_bytes,
                                   mail_per_hour=lim.mail_per_hour, ai_max_output_tokens=lim.ai_max_output_tokens)
              for name, lim in orgs.every_plan(config).items()}
    return BillingStatus(plan=Plan.pro if pro else Plan.free,
                         status=account.status if pro and account is not None else None,
                         period_end=account.current_period_end if account is not None and pro else None,
                         cancel_at_period_end=bool(account and pro and account.cancel_at_period_end),
                         enabled=enabled, sandbox=sandbox, limits=limits)


async def status(uow: UnitOfWork, access: OrgAccess) -> BillingStatus:
    found = uow.ctx.adapters.billing
    account = await queries.account(uow.session, access.org.id)
    return status_view(access.org, account, uow.ctx.config, enabled=found is not None,
                       sandbox=bool(found and found.sandbox))


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def checkout(uow: UnitOfWork, access: OrgAccess, return_to: str) -> str:
    """The provider's checkout page for the pro plan (the plan changes with its webhook only).

    An org holds one open checkout or one live subscription at most: a second checkout answers the
    open one, and one for an org the provider already bills (a webhook late or lost) is 409
    already_pro in words of its own, a reconcile of the org started. Two at once both answer the first kept."""
    settings = uow.ctx.settings
    if not urls.under(return_to, settings.public_url):
        raise errors.ReturnToNotAllowed.of_field("returnTo", f"must be under {settings.public_url}")
    billing = provider(uow)
    org = access.org
    if org.plan == Plan.pro:
        raise errors.AlreadyPro()
    email = access.principal.user.email if access.principal.user is not None else None
    account = await queries.account(uow.session, org.id)
    held_checkout = account.checkout_id if account is not None else None
    external = account.customer_external_id if account is not None else org.slug
    await uow.close_reads()
    found = await reconcile.at_provider(uow, billing, external, account.customer_id if account is not None else None,
                                        "no checkout was made")
    if found.live:
        _reconcile_soon(uow, org.id)
        sub = found.live[0]
        raise errors.SubscriptionLive(f"This org already has a live pro subscription at the billing provider "
                                      f"({sub.id}, {sub.status}); svc has not heard of it yet and is checking "
                                      f"with the provider now: a second checkout would charge twice")
    made = await call(uow, billing.checkout_of(held_checkout)) if held_checkout else None
    reused = made is not None and made.payable
    if made is None or not made.payable:
        made = await call(uow, billing.checkout(org_slug=org.slug, email=email, success_url=return_to))
    await uow.begin_write()
    await orgs.lock_org(uow, org.id)  # the org, then its account: the webhook's order too
    account = await queries.account(uow.session, org.id, lock=True)
    now = utcnow()
    if account is None:
        account = BillingAccount(org_id=org.id, provider=billing.name, customer_external_id=org.slug,
                                 cancel_at_period_end=False, live_subscriptions=0, created_at=now, updated_at=now)
        uow.session.add(account)
    elif (account.checkout_id not in (None, held_checkout, made.id) and account.checkout_url
          and (account.checkout_expires_at is None or account.checkout_expires_at > now)):
        # Another request kept its checkout meanwhile: that one is the org's (this one, never
        # shown to anyone, cannot be paid).
        return account.checkout_url
    account.checkout_id, account.checkout_url, account.checkout_expires_at = made.id, made.url, made.expires_at
    account.updated_at = now
    await record(uow.session, "billing.checkout", actor=access.principal.user, org=org, target=org.slug,
                 data={"checkout": made.id, "plan": "pro", "product": made.product_id,
                       "amountCents": made.amount, "currency": made.currency, "reused": reused,
                       "by": _actor(access)})
    return str(made.url)


def _actor(access: OrgAccess) -> str:
    """Who acted, in words for the audit trail (a session, or a personal access token)."""
    user = access.principal.user
    return f"{user.provider}:{user.subject} ({access.principal.kind})"


def _reconcile_soon(uow: UnitOfWork, org_id: str) -> None:
    """A reconcile of the org, enqueued even though this use case is refused (after its rollback)."""
    ctx = uow.ctx

    async def enqueue() -> None:
        async with unit_of_work(ctx, Tx.WRITE) as again:
            again.enqueue(BillingJob.reconcile, {"org_id": org_id})

    uow.after_rollback(enqueue)


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
    the provider's webhooks follow. A cancel ends every live subscription of the org (a duplicate
    too: nothing goes on charging); a resume resumes the one the org follows."""
    billing = provider(uow)
    org = access.org
    account = await queries.account(uow.session, org.id)
    if org.plan != Plan.pro or account is None or account.subscription_id is None:
        raise errors.NotPro()
    held = subscriptions.known({name: getattr(account, name) for name in queries.ACCOUNT_STATE})
    targets = (subscriptions.live(held) or [account.subscription_id]) if cancel_ else [account.subscription_id]
    await uow.close_reads()
    changed = [await call(uow, billing.set_cancel(sub_id, cancel_)) for sub_id in targets]
    await uow.begin_write()
    await orgs.lock_org(uow, org.id)  # the org, then its account: the webhook's order too
    account = await queries.account(uow.session, org.id, lock=True)
    if account is not None:
        for sub in changed:
            subscriptions.follow(account, sub)
    await record(uow.session, "billing.cancel" if cancel_ else "billing.resume", actor=access.principal.user,
                 org=org, target=org.slug,
                 data={"subscriptions": [sub.id for sub in changed], "plan": "pro",
                       "amountCents": sum(sub.amount or 0 for sub in changed),
                       "currency": next((sub.currency for sub in changed if sub.currency), None),
                       "periodEnd": rfc3339(changed[0].current_period_end) if changed[0].current_period_end else None,
                       "cancelAtPeriodEnd": cancel_, "by": _actor(access)})
    return status_view(org, account, uow.ctx.config, enabled=True, sandbox=billing.sandbox)


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
async def reconcile_slug(uow: UnitOfWork, slug: str) -> reconcile.Reconciled | None:
    """An operator's reconcile of one org, now (reconcile.py); None when there is no such org.
    BillingOff without a provider, BillingUnavailable when it cannot be asked: in words."""
    found = await orgs.org_by_slug(uow, slug)
    if found is None:
        return None
    return await reconcile.reconcile_org(uow, found.id)


async def duplicates(uow: UnitOfWork) -> list[tuple[str, BillingAccount]]:
    """The orgs paying for more than one live subscription, for the operator's billing page."""
    return await queries.duplicates(uow.session)


async def unsettled(uow: UnitOfWork) -> list[Unsettled]:
    """Money the provider took whose effect did not follow, from every area that sells something
    (their manifests), newest first: for the operator's billing page until each is settled."""
    found = [item for source in uow.ctx.unsettled for item in await source(uow.session)]
    return sorted(found, key=lambda item: item.at, reverse=True)
