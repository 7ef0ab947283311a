"""The two rules every way into billing follows (a webhook, a replay, cancel, the reconcile):

- an org's billing account takes a subscription's state, unless the state it holds is newer (the
  subscription's own modified time: events arrive late and out of order);
- the plan follows the subscription's status, per the spec's state table: active, trialing or
  past_due make the org pro, anything else free. A downgrade keeps everything and tells the org
  what is now over the free plan's limits."""

from __future__ import annotations

import logging
from typing import Any

from svc.adapters.billing.port import PRO_STATUSES, Subscription
from svc.domains.audit.service import record
from svc.domains.billing.queries import ACCOUNT_STATE
from svc.domains.notifications import service as notifications
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.kit.clock import utcnow
from svc.models import BillingAccount, Org, Plan
from svc.uow import UnitOfWork

log = logging.getLogger("svc.billing")

def plan_for(status: str | None) -> Plan:
    return Plan.pro if status in PRO_STATUSES else Plan.free


def followed(current: dict[str, Any] | None, sub: Subscription) -> dict[str, Any] | None:
    """The account's new state (ACCOUNT_STATE's columns and updated_at) from the subscription, or
    None when the state it holds is newer."""
    held = current.get("provider_modified_at") if current else None
    if held is not None and sub.modified_at is not None and sub.modified_at < held:
        return None
    return {"subscription_id": sub.id, "customer_id": sub.customer_id or (current or {}).get("customer_id"),
            "status": sub.status, "current_period_end": sub.current_period_end,
            "cancel_at_period_end": sub.cancel_at_period_end, "provider_modified_at": sub.modified_at or held,
            "updated_at": utcnow()}


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
    limit = orgs.limits_of(settings, Plan.free).projects
    count = await projects.count_in_org(uow, org.id)
    over = f" It has {count} projects, over the free plan's {limit}: they all keep running, and a new one " \
           f"can be created once it is under." if count > limit else ""
    await notifications.mailed(uow, org, kind="billing.downgraded", settings=settings,
                               subject="back on the free plan",
                               message=f"{org.name} ({org.slug}) is on the free plan now: its pro subscription "
                                       f"ended.{over}", data={"projects": count, "projectLimit": limit})
