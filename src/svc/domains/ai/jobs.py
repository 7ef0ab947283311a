"""The AI area's jobs: an org's auto top-up (charged through the billing provider, topups.py), and
the cycle that lets go the holds of calls a crash left in flight and forgets the spend by minute
older than a day (gateway.py)."""

from __future__ import annotations

from datetime import timedelta

from svc.domains.ai import gateway, topups
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.models import JobKind
from svc.settings import Settings
from svc.uow import Tx, use_case

RELEASE_EVERY_SECONDS = 300.0


def register(registry: JobRegistry, settings: Settings) -> None:
    registry.handler(JobKind.ai_autotopup, autotopup)
    registry.cycle(JobKind.ai_release_cycle, RELEASE_EVERY_SECONDS, release_cycle)


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def autotopup(run: JobRun) -> None:
    await topups.charge(run.uow, str(run.payload["org_id"]), int(run.payload["microCents"]),
                        last_attempt=run.last_attempt)


@use_case(Tx.WRITE)
async def release_cycle(run: JobRun) -> None:
    # A live call settles within the upstream's timeout (a stream may run longer: twice, and ten
    # minutes at least); a hold older than that belongs to a process that is gone.
    longest = max(timedelta(minutes=10), timedelta(seconds=2 * run.ctx.settings.ai_timeout_seconds))
    await gateway.release_stale(run.uow, utcnow() - longest)
    await gateway.forget_usage(run.uow, utcnow() - timedelta(hours=25))
