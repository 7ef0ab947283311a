"""The AI area's jobs: an org's auto top-up (charged through the billing provider, topups.py), the
cycle that lets go the holds of calls a crash left in flight and forgets the spend by minute older
than a day (gateway.py), and the cycle that credits the paid orders whose order.paid was lost, for
the orgs waiting for one (topups.py; the billing reconcile does it too, for every paying org)."""

from __future__ import annotations

from datetime import timedelta

from svc.adapters.ai.settings import AiUpstreamSettings
from svc.domains.ai import gateway, topups
from svc.domains.ai.kinds import AIJob
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.settings import Config
from svc.uow import Tx, use_case

RELEASE_EVERY_SECONDS = 300.0
# Orders paid whose webhook was lost: looked for hourly, as long as an org waits for one.
ORDERS_EVERY_SECONDS = 3600.0


def register(registry: JobRegistry, config: Config) -> None:
    registry.handler(AIJob.autotopup, autotopup)
    registry.cycle(AIJob.release_cycle, RELEASE_EVERY_SECONDS, release_cycle)
    registry.cycle(AIJob.orders_cycle, ORDERS_EVERY_SECONDS, orders_cycle)
    registry.handler(AIJob.orders, orders)


@use_case(Tx.WRITE)
async def orders_cycle(run: JobRun) -> None:
    if run.ctx.adapters.billing is None:
        return
    for org_id in await topups.waiting_for_orders(run.session, utcnow()):
        run.uow.enqueue(AIJob.orders, {"org_id": org_id})


@use_case(Tx.READ_THEN_WRITE)  # nothing of the job's own held: reconcile_orders opens its units of work
async def orders(run: JobRun) -> None:
    await topups.reconcile_orders(run.ctx, str(run.payload["org_id"]))


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def autotopup(run: JobRun) -> None:
    await topups.charge(run.uow, str(run.payload["org_id"]), int(run.payload["microCents"]),
                        key=f"autotopup:{run.job_id}", last_attempt=run.last_attempt)


@use_case(Tx.WRITE)
async def release_cycle(run: JobRun) -> None:
    # A live call settles within the upstream's timeout (a stream may run longer: twice, and ten
    # minutes at least); a hold older than that belongs to a process that is gone.
    timeout = run.ctx.settings_of(AiUpstreamSettings).ai_timeout_seconds
    longest = max(timedelta(minutes=10), timedelta(seconds=2 * timeout))
    await gateway.release_stale(run.uow, utcnow() - longest)
    await gateway.forget_usage(run.uow, utcnow() - timedelta(hours=25))
