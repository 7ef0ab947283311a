"""`domains.sync_cycle`: every purchased domain read back from the registrar once a day (expiry,
lock, NS; gone from the account: transferred_out), and one notice 30 days before an expiry that
auto-renew will not cover; and each refund owed (a registration refused for good whose refund
failed) tried again, so that it happens even if nobody sends the purchase again."""

from __future__ import annotations

import logging
from datetime import timedelta

from svc.domains.domain_names import errors, queries, saga, service
from svc.domains.domain_names.kinds import DomainJob
from svc.domains.notifications import service as notifications
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.models import DomainSource, DomainStatus
from svc.settings import Config
from svc.uow import Tx, unit_of_work, use_case

log = logging.getLogger("svc.domains")

SYNC_CYCLE_SECONDS = 3600.0
SYNC_EVERY = timedelta(hours=24)
SYNC_BATCH = 100
EXPIRY_NOTICE = timedelta(days=30)


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(DomainJob.sync_cycle, SYNC_CYCLE_SECONDS, sync_cycle)


@use_case(Tx.READ_THEN_WRITE)  # each domain is synced in a unit of its own
async def sync_cycle(run: JobRun) -> None:
    if run.ctx.adapters.registrar is None:
        return
    due = await queries.sync_due(run.session, utcnow() - SYNC_EVERY, SYNC_BATCH)
    await run.uow.close_reads()
    for _, name in due:
        try:
            async with unit_of_work(run.ctx, Tx.READ_THEN_WRITE) as uow:
                await service.sync(uow, None, name)
        except errors.RegistrarFailed as exc:  # the next round tries again
            log.warning("domains: the sync of %s failed: %s", name, exc.message)
    await saga.refunds_owed(run.ctx)
    await notify_expiring(run)


async def notify_expiring(run: JobRun) -> None:
    """One notification per expiry date, 30 days ahead, for purchased domains without auto-renew."""
    async with unit_of_work(run.ctx, Tx.WRITE) as uow:
        now = utcnow()
        for domain in await queries.expiring(uow.session, now + EXPIRY_NOTICE):
            if (domain.source != DomainSource.purchase or domain.auto_renew or domain.expires_at is None
                    or domain.status != DomainStatus.active or domain.expiry_notified_for == domain.expires_at):
                continue
            domain.expiry_notified_for = domain.expires_at
            notifications.notify(uow.session, org_id=domain.org_id, kind="domain.expiring",
                                 message=f"The domain {domain.name} expires on {domain.expires_at.date().isoformat()} "
                                         "and auto-renew is off: renew it (svc domains renew) or it lapses.",
                                 data={"name": domain.name})
