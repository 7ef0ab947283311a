"""The billing area's jobs: the daily reconcile. Webhooks get lost (the first complaint about
every billing integration): each paying org's subscription is read from the provider and a drift
(a plan the webhooks never changed) is repaired and logged as such; reconcile.py says how. Every org
with an account is compared, those whose customer svc never heard of too (their first webhooks lost)."""

from __future__ import annotations

import logging

from svc.domains.billing import errors, queries
from svc.domains.billing.kinds import BillingJob
from svc.domains.billing.reconcile import reconcile_org
from svc.domains.billing.settings import BillingSettings
from svc.jobs.registry import JobRegistry, JobRun
from svc.settings import Config
from svc.uow import Tx, use_case

log = logging.getLogger("svc.billing")


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(BillingJob.reconcile_cycle, BillingSettings().billing_reconcile_seconds, cycle)
    registry.handler(BillingJob.reconcile, reconcile)


@use_case(Tx.WRITE)
async def cycle(run: JobRun) -> None:
    if run.ctx.adapters.billing is None:
        return
    for org_id in await queries.billed_orgs(run.session):
        run.uow.enqueue(BillingJob.reconcile, {"org_id": org_id})


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def reconcile(run: JobRun) -> None:
    try:
        await reconcile_org(run.uow, str(run.payload["org_id"]))
    except (errors.BillingUnavailable, errors.BillingOff) as exc:
        log.warning("billing reconcile of org %s: %s; the next cycle tries again", run.payload["org_id"], exc)
