"""The two rules every way into billing follows (a webhook, a replay, cancel, the reconcile):

- an org's billing account follows each of its subscriptions on its own: one takes an event's
  state unless the state held of that same subscription is newer (the subscription's own modified
  time: events arrive late and out of order);
- the plan follows the org's live subscription, per the spec's state table: while any of its
  subscriptions is active, trialing or past_due the org is pro, else free (an old subscription's
  late event never makes it free). A downgrade keeps everything and tells the org what is now over
  the free plan's limits. More than one live subscription is a duplicate (the customer pays twice):
  counted on the account, for the operator."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from svc.adapters.billing.port import PRO_STATUSES, Subscription
from svc.domains.audit.service import record
from svc.domains.billing.queries import ACCOUNT_STATE
from svc.domains.notifications import service as notifications
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.kit.clock import as_utc, utcnow
from svc.models import BillingAccount, Org, Plan
from svc.uow import UnitOfWork

log = logging.getLogger("svc.billing")

# An account keeps this many subscriptions at most: every live one, then the newest others.
KEPT = 20


def plan_for(status: str | None) -> Plan:
    return Plan.pro if status in PRO_STATUSES else Plan.free


def _time(value: datetime | None) -> str | None:
    return as_utc(value).isoformat(timespec="microseconds") if value is not None else None


def _parsed(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _entry(sub: Subscription) -> dict[str, Any]:
    return {"status": sub.status, "modifiedAt": _time(sub.modified_at), "periodEnd": _time(sub.current_period_end),
            "cancelAtPeriodEnd": sub.cancel_at_period_end}


def known(current: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The subscriptions an account holds, by id (an account from before they were followed one by
    one holds its one in the columns)."""
    current = current or {}
    subs: dict[str, dict[str, Any]] = dict(current.get("subscriptions") or {})
    held = current.get("subscription_id")
    if held and held not in subs:
        subs[held] = {"status": current.get("status"), "modifiedAt": _time(current.get("provider_modified_at")),
                      "periodEnd": _time(current.get("current_period_end")),
                      "cancelAtPeriodEnd": bool(current.get("cancel_at_period_end"))}
    return subs


def live(subs: dict[str, dict[str, Any]]) -> list[str]:
    """The live ones (the statuses that make an org pro), newest first."""
    found = [(entry.get("modifiedAt") or "", sub_id) for sub_id, entry in subs.items()
             if entry.get("status") in PRO_STATUSES]
    return [sub_id for _, sub_id in sorted(found, reverse=True)]


def _shown(subs: dict[str, dict[str, Any]]) -> str:
    """The subscription the org follows: its live one (the newest, if it pays twice), else its
    newest. An event of an old subscription never outweighs a live one, however late it is."""
    return max(subs, key=lambda sub_id: (subs[sub_id].get("status") in PRO_STATUSES,
                                         subs[sub_id].get("modifiedAt") or ""))


def state(current: dict[str, Any] | None, subs: dict[str, dict[str, Any]],
          customer_id: str | None) -> dict[str, Any]:
    """The account's new state (ACCOUNT_STATE's columns and updated_at) from its subscriptions."""
    lively = live(subs)
    others = sorted((sub_id for sub_id in subs if sub_id not in lively),
                    key=lambda sub_id: subs[sub_id].get("modifiedAt") or "", reverse=True)
    subs = {sub_id: subs[sub_id] for sub_id in [*lively, *others][:max(KEPT, len(lively))]}
    shown = _shown(subs)
    entry = subs[shown]
    return {"subscription_id": shown, "customer_id": customer_id or (current or {}).get("customer_id"),
            "status": entry.get("status"), "current_period_end": _parsed(entry.get("periodEnd")),
            "cancel_at_period_end": bool(entry.get("cancelAtPeriodEnd")),
            "provider_modified_at": _parsed(entry.get("modifiedAt")), "subscriptions": subs,
            "live_subscriptions": len(lively), "updated_at": utcnow()}


def takes(subs: dict[str, dict[str, Any]], sub: Subscription) -> bool:
    """Whether `subs` takes this state of one of them (in place): not when the state held for that
    subscription is newer (its own modified time: events arrive late and out of order)."""
    held = _parsed((subs.get(sub.id) or {}).get("modifiedAt"))
    if held is not None and sub.modified_at is not None and as_utc(sub.modified_at) < held:
        return False
    subs[sub.id] = _entry(sub)
    return True


def followed(current: dict[str, Any] | None, sub: Subscription) -> dict[str, Any] | None:
    """The account's new state from one subscription's event, or None when the state it holds of
    that subscription is newer. Each subscription is followed on its own; the plan follows the
    org's live one (any live one keeps the org pro)."""
    subs = known(current)
    if not takes(subs, sub):
        return None
    return state(current, subs, sub.customer_id)


def follow(account: BillingAccount, sub: Subscription) -> bool:
    """The account (a loaded row) takes the subscription's state, unless what it holds is newer;
    whether it did."""
    values = followed({name: getattr(account, name) for name in ACCOUNT_STATE}, sub)
    for name, value in (values or {}).items():
        setattr(account, name, value)
    return values is not None


async def set_plan(uow: UnitOfWork, org: Org, plan: Plan, *, reason: str) -> bool:
    """The org on `plan` (audited; a downgrade tells the org); whether it changed."""
    if org.plan == plan:
        return False
    old, org.plan = org.plan, plan
    await record(uow.session, "org.plan", actor=None, org=org, target=org.slug,
                 data={"from": old, "to": plan.value, "by": "billing", "event": reason})
    log.info("org %s is now on the %s plan (%s)", org.slug, plan.value, reason)
    if plan == Plan.free:
        await _tell_over_limits(uow, org)
    return True


async def _tell_over_limits(uow: UnitOfWork, org: Org) -> None:
    """A downgrade keeps everything: the org is told what is now over the free plan's limits (new
    projects are refused until it is under)."""
    settings = uow.ctx.settings
    limit = orgs.limits_of(uow.ctx.config, Plan.free).projects
    count = await projects.count_in_org(uow, org.id)
    over = f" It has {count} projects, over the free plan's {limit}: they all keep running, and a new one " \
           f"can be created once it is under." if count > limit else ""
    await notifications.mailed(uow, org, kind="billing.downgraded", settings=settings,
                               subject="back on the free plan",
                               message=f"{org.name} ({org.slug}) is on the free plan now: its pro subscription "
                                       f"ended.{over}", data={"projects": count, "projectLimit": limit})
