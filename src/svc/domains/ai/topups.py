"""Buying AI credit (docs/ai.md, "Buying credit"): a checkout for a tier, and the auto top-up an org
consents to, both paid through the billing provider. The balance rises only when the provider says
the order is paid (order.paid at /v1/hooks/polar), exactly once per order: the ledger's order_id is
unique, and the org's credit row is held while it is looked up.

Auto top-up, when the balance falls below the threshold after a call: one charge at a time (the
charge under way is recorded with the settlement that asked for it), at most ai_autotopup_per_day
a day, declines included. A declined charge stops auto top-up and tells the org's admins; nothing
is tried again until they buy credit by hand or turn it on again, so a bad card never becomes a
storm of charges."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

from svc.adapters.billing.port import BillingRejected, BillingUnavailable, ChargeDeclined, PaidOrder
from svc.adapters.billing.settings import BillingProviderSettings
from svc.auth.roles import OrgAccess
from svc.context import AppContext, Unsettled
from svc.domains.ai import errors, queries, schemas
from svc.domains.ai.kinds import AIJob
from svc.domains.ai.settings import AISettings
from svc.domains.audit.service import record
from svc.domains.billing import errors as billing_errors
from svc.domains.billing import service as billing
from svc.domains.notifications import service as notifications
from svc.domains.orgs import service as orgs
from svc.errors import BadRequest
from svc.kit import money, urls
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import AICredit, Org
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

log = logging.getLogger("svc.ai")

# A balance a call takes below this is told to the org (once, as it crosses): $1.
LOW_BALANCE = 100_000_000
# What a cent paid buys (the checkout's price is the tier's micro-cents over this).
MICRO_CENTS_A_CENT = 1_000_000
# How long after a checkout for credit the orders cycle looks for its paid order (a checkout
# page stays payable for an hour; a day or two covers a provider's late answer).
ORDERS_LOOKBACK = timedelta(days=2)
# A charge asked of the provider whose order.paid never came (a lost webhook) stops holding back
# the next one after this long; the daily limit still bounds them.
CHARGE_WAIT = timedelta(hours=1)


def tiers() -> list[int]:
    return list(schemas.CREDIT_TIERS)


def _tier(micro_cents: int, field: str) -> int:
    """The API's schema allows only the tiers; the dashboard's form values are checked here."""
    allowed = tiers()
    if micro_cents not in allowed:
        raise BadRequest.of_field(field, "one of " + ", ".join(f"{t} ({money.dollars(t)})" for t in allowed))
    return micro_cents


def _selling(uow: UnitOfWork) -> Any:
    if uow.ctx.adapters.billing is None:
        raise billing_errors.BillingOff("Billing is not configured on this svc, so it sells no AI credit: its "
                                        "operator adds credit on the server (svc admin credit ORG +$5 --reason "
                                        "...), or turns billing on (SVC_BILLING)")
    provider = billing.provider(uow)
    if not provider.sells_credit:
        raise billing_errors.BillingOff("This svc sells no AI credit: its operator sets SVC_POLAR_CREDIT_PRODUCT_ID")
    return provider


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def checkout(uow: UnitOfWork, access: OrgAccess, micro_cents: int, return_to: str) -> str:
    """The provider's checkout page for a tier of credit (the balance rises with its order.paid)."""
    _tier(micro_cents, "microCents")
    settings = uow.ctx.settings
    if not urls.under(return_to, settings.public_url):
        raise billing_errors.ReturnToNotAllowed.of_field("returnTo", f"must be under {settings.public_url}")
    provider = _selling(uow)
    org = access.org
    email = access.principal.user.email if access.principal.user is not None else None
    await uow.close_reads()
    made = await billing.call(uow, provider.credit_checkout(
        org_slug=org.slug, email=email, cents=micro_cents // MICRO_CENTS_A_CENT, success_url=return_to,
        metadata={"orgSlug": org.slug, "microCents": micro_cents}))
    await uow.begin_write()
    await record(uow.session, "ai.checkout", actor=access.principal.user, org=org, target=org.slug,
                 data={"microCents": micro_cents})
    return str(made.url)


@use_case(Tx.WRITE)
async def set_autotopup(uow: UnitOfWork, access: OrgAccess, enabled: bool, threshold: int | None,
                        amount: int | None) -> AICredit:
    """Turn auto top-up on (explicit consent: a stored payment method, a tier, a threshold above 0
    and below it) or off. Turning it on again lifts a stop after a decline."""
    session = uow.session
    org = access.org
    await queries.ensure_credit(session, org.id, utcnow())
    row = await queries.credit(session, org.id, lock=True)
    assert row is not None
    if enabled:
        if amount is None or threshold is None:
            raise BadRequest("thresholdMicroCents and amountMicroCents: both, to turn auto top-up on")
        _tier(amount, "amountMicroCents")
        if not 0 < threshold < amount:
            raise BadRequest.of_field("thresholdMicroCents", "above 0 and below amountMicroCents")
        if not row.payment_customer_id:
            raise errors.NoPaymentMethod()
        row.autotopup_enabled = True
        row.autotopup_threshold_micro_cents, row.autotopup_amount_micro_cents = threshold, amount
        row.autotopup_stopped = None
        await record(session, "ai.autotopup.on", actor=access.principal.user, org=org, target=org.slug,
                     data={"thresholdMicroCents": threshold, "amountMicroCents": amount})
        await maybe_top_up(uow, row)  # already below the threshold: at once
    elif row.autotopup_enabled:
        row.autotopup_enabled = False
        await record(session, "ai.autotopup.off", actor=access.principal.user, org=org, target=org.slug)
    row.updated_at = utcnow()
    return row


def topups_today(row: AICredit | None, now: datetime | None = None) -> int:
    if row is None or row.autotopup_day != (now or utcnow()).date().isoformat():
        return 0
    return row.autotopups_on_day


async def maybe_top_up(uow: UnitOfWork, row: AICredit) -> bool:
    """After the balance moved down (the credit row held): a charge when auto top-up is on, the
    balance is below its threshold, none is under way, none was declined, and today's are not
    used up. In the caller's transaction, as a job."""
    if not row.autotopup_enabled or row.autotopup_stopped or row.autotopup_threshold_micro_cents is None:
        return False
    if row.balance_micro_cents >= row.autotopup_threshold_micro_cents:
        return False
    now = utcnow()
    if row.autotopup_charging_since is not None and now - row.autotopup_charging_since < CHARGE_WAIT:
        return False
    if topups_today(row, now) >= uow.ctx.settings_of(AISettings).ai_autotopup_per_day:
        return False
    day = now.date().isoformat()
    row.autotopups_on_day = topups_today(row, now) + 1
    row.autotopup_day = day
    row.autotopup_charging_since = now
    uow.enqueue(AIJob.autotopup, {"org_id": row.org_id, "microCents": row.autotopup_amount_micro_cents})
    return True


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def charge(uow: UnitOfWork, org_id: str, micro_cents: int, *, key: str, last_attempt: bool) -> None:
    """The auto top-up's charge (the job; `key` names it at the provider, the same on every attempt,
    so an attempt that died after the charge and before its record never charges twice). Paid: the
    balance rises in this job's write, once per order as order.paid's would. Declined: auto top-up
    stops and the admins are told. The provider down: the job tries again later."""
    row = await queries.credit(uow.session, org_id)
    org = await uow.session.get(Org, org_id)
    if row is None or org is None or row.autotopup_charging_since is None or not row.payment_customer_id:
        return  # turned off, or paid meanwhile
    customer = row.payment_customer_id
    await uow.close_reads()
    provider = _selling(uow)
    try:
        paid = await asyncio.wait_for(
            provider.charge(customer_id=customer, cents=micro_cents // MICRO_CENTS_A_CENT,
                            metadata={"orgSlug": org.slug, "microCents": micro_cents, "autoTopup": True}, key=key),
            timeout=uow.ctx.settings_of(BillingProviderSettings).billing_timeout_seconds)
    except ChargeDeclined as exc:
        await _stopped(uow, org, f"the provider declined the saved payment method ({exc})")
        return
    except (TimeoutError, BillingUnavailable) as exc:
        if not last_attempt:
            raise  # the job's backoff: a provider outage is no decline
        await _stopped(uow, org, f"the billing provider did not answer ({exc or 'no answer in time'})")
        return
    except BillingRejected as exc:
        await _stopped(uow, org, f"the billing provider refused the charge ({exc})")
        return
    if paid is None:
        log.info("ai: auto top-up of %s for %s: charged, the order is not paid yet", money.dollars(micro_cents),
                 org.slug)
        return
    await uow.begin_write()
    outcome = await order_paid(uow, paid)
    log.info("ai: auto top-up of %s for %s: %s", money.dollars(micro_cents), org.slug,
             outcome[1] if outcome is not None else f"order {paid.id} is not credit")


async def _stopped(uow: UnitOfWork, org: Org, why: str) -> None:
    await uow.begin_write()
    row = await queries.credit(uow.session, org.id, lock=True)
    if row is None:
        return
    row.autotopup_charging_since = None
    row.autotopup_stopped = why[:300]
    row.updated_at = utcnow()
    log.warning("ai: auto top-up for %s stopped: %s", org.slug, why)
    await notifications.mailed(
        uow, org, kind="ai.autotopup.declined", subject=f"AI credit: the auto top-up of {org.slug} failed",
        message=f"The automatic top-up of {org.slug}'s AI credit failed: {why}. Auto top-up is paused: buy "
                "credit once (svc ai topup) or turn auto top-up on again (svc ai autotopup) to resume it. The "
                f"balance is {money.dollars(row.balance_micro_cents)}.",
        settings=uow.ctx.settings, data={"reason": why[:300]})


async def order_paid(uow: UnitOfWork, order: PaidOrder) -> tuple[str, str] | None:
    """order.paid for AI credit (its metadata says microCents): the balance rises once per order,
    the customer's payment method is kept for auto top-up. None: the order is not credit."""
    tier = order.metadata.get("microCents")
    if tier is None:
        return None
    org = await orgs.org_by_slug(uow, order.org_slug) if order.org_slug else None
    if org is None:
        return "failed", f"order {order.id}: no org {order.org_slug!r} on this svc"
    session = uow.session
    now = utcnow()
    await queries.ensure_credit(session, org.id, now)
    row = await queries.credit(session, org.id, lock=True)  # a second copy of the order waits here
    assert row is not None
    if await queries.has_order(session, order.id):
        return "ignored", f"order {order.id} was credited before"
    refused = _disagrees(order, tier)
    if refused is not None:
        # Never the tier for less than its price (a discount at the provider, a price changed
        # there): no credit, and the operator and the org's admins are told once (the trail).
        log.warning("ai: %s; not credited", refused)
        if not await queries.refused_before(session, order.id):
            await record(session, "ai.topup.refused", actor=None, org=org, target=order.id,
                         data={"order": order.id, "microCents": tier if isinstance(tier, int) else None,
                               "paidCents": order.paid_cents, "currency": order.currency, "reason": refused})
        return "failed", refused
    amount = int(tier)
    auto = order.metadata.get("autoTopup") is True
    await queries.add_entry(session, org_id=org.id, kind="autotopup" if auto else "topup", micro_cents=amount,
                            now=now, order_id=order.id)
    await session.refresh(row)
    if order.customer_id:
        row.payment_customer_id = order.customer_id
    if auto:
        row.autotopup_charging_since = None
    else:
        row.autotopup_stopped = None  # a card that pays by hand again: auto top-up may resume
    await record(session, "ai.topup", actor=None, org=org, target=org.slug,
                 data={"microCents": amount, "order": order.id, "auto": auto})
    how = "topped up automatically" if auto else "bought"
    notifications.notify(session, org_id=org.id, kind="ai.topup",
                         message=f"{money.dollars(amount)} of AI credit {how}; the balance is "
                                 f"{money.dollars(row.balance_micro_cents)}",
                         data={"microCents": amount, "order": order.id})
    return "applied", f"order {order.id}: {money.dollars(amount)} of AI credit"


def _disagrees(order: PaidOrder, tier: Any) -> str | None:
    """Why a paid order of credit is not credited, or None: credit is what the order's paid amount
    buys (a cent buys a million micro-cents, as the checkout priced it), and it must be the tier
    the order names (metadata.microCents), whole."""
    if not isinstance(tier, int) or isinstance(tier, bool) or tier not in schemas.CREDIT_TIERS:
        return f"order {order.id}: microCents {str(tier)[:40]!r} is not a tier of credit"
    if order.paid_cents is None or order.currency != "usd":
        return f"order {order.id}: the provider does not say what was paid in usd"
    if order.paid_cents * MICRO_CENTS_A_CENT != tier:
        return (f"order {order.id}: paid {order.paid_cents} cents, but the tier {money.dollars(tier)} costs "
                f"{tier // MICRO_CENTS_A_CENT} (a discount or a price changed at the provider)")
    return None


async def reconcile_orders(ctx: AppContext, org_id: str) -> int:
    """The billing reconcile's part for AI credit: the org's paid orders of credit at the provider,
    each credited that was not (its order.paid lost), as order.paid credits it (once per order: the
    same row lock and ledger check, so a webhook arriving meanwhile credits nothing twice). How
    many were credited. A provider that does not answer: logged, the next reconcile tries again."""
    provider = ctx.adapters.billing
    if provider is None or not provider.sells_credit:
        return 0
    async with unit_of_work(ctx, Tx.READ) as uow:
        org = await uow.session.get(Org, org_id)
        slug = org.slug if org is not None else None
    if slug is None:
        return 0
    try:
        orders = await asyncio.wait_for(provider.paid_credit_orders(slug),
                                        timeout=ctx.settings_of(BillingProviderSettings).billing_timeout_seconds)
    except (TimeoutError, BillingUnavailable, BillingRejected) as exc:
        log.warning("ai: the paid orders of %s: the provider did not answer (%s); next reconcile", slug,
                    exc or "no answer in time")
        return 0
    orders = [o for o in orders if o.org_slug == slug and "microCents" in o.metadata]
    async with unit_of_work(ctx, Tx.READ) as uow:
        # The ones credited or refused before cost no write (order_paid checks again, row held).
        known = await queries.known_orders(uow.session, [o.id for o in orders])
    credited = 0
    for order in orders:
        if order.id in known:
            continue
        async with unit_of_work(ctx, Tx.WRITE) as uow:
            outcome = await order_paid(uow, order)
        if outcome is not None and outcome[0] == "applied":
            credited += 1
            log.warning("ai: reconcile credited %s: its order.paid never arrived (%s)", slug, outcome[1])
    return credited


async def unsettled(session: StoreSession) -> list[Unsettled]:
    """For the operator's billing page: paid orders of credit refused and not settled since."""
    return [Unsettled(at=event.at, org_slug=event.org_slug, reference=str(event.target),
                      paid_cents=event.data.get("paidCents"), currency=str(event.data.get("currency") or ""),
                      why=str(event.data.get("reason") or "refused"),
                      settle=f"refund it at the provider, or credit what it paid: svc admin credit "
                             f"{event.org_slug or 'ORG'} AMOUNT --order {event.target} --reason R")
            for event in await queries.refused_unsettled(session)]


async def waiting_for_orders(session: StoreSession, now: datetime) -> list[str]:
    """The orgs whose credit order may have been paid without svc being told: a checkout for credit
    in the last ORDERS_LOOKBACK, or an auto top-up charge under way."""
    return await queries.waiting_for_orders(session, now - ORDERS_LOOKBACK)


def low_balance(session: StoreSession, org_id: str, settled: queries.Settled) -> None:
    """When a call takes the balance under $1 (and auto top-up will not refill it): one notification."""
    floor = LOW_BALANCE
    if settled.before >= floor > settled.after and not settled.autotopup:
        notifications.notify(session, org_id=org_id, kind="ai.low_balance",
                             message=f"The AI credit is low: {money.dollars(settled.after)} left. Buy more "
                                     "(svc ai topup) or turn on auto top-up.",
                             data={"balanceMicroCents": settled.after})
