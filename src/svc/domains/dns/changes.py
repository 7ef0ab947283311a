"""Every change to a zone goes through here, in the change's transaction: a new generation, the
(name, type) keys the next sync must send, and a `dns.sync` job unless one is already due
(jobs.py converges the nameserver). The service, the project links and the sync itself use it."""

from __future__ import annotations

from datetime import timedelta

from svc.domains.dns import queries
from svc.domains.dns.kinds import DnsJob
from svc.kit.clock import utcnow
from svc.models import Zone
from svc.uow import UnitOfWork

# A sync that keeps failing is retried with the queue's backoff (capped at an hour) for about a
# day: a zone deletion must reach the nameserver even after a long outage, since the reconcile
# only repairs zones the store still has.
SYNC_MAX_ATTEMPTS = 30
SYNC_GATHER = timedelta(milliseconds=20)
MAX_RRSETS = 25_000  # per zone; the nameserver's API takes ~10,000 rrsets per request comfortably


def zone_changed(uow: UnitOfWork, zone: Zone, *, force: bool = False) -> None:
    """A change the record-set keys cannot express (the zone made, DNSSEC switched, drift found):
    the next sync compares the whole zone with the nameserver."""
    _bump(uow, zone, full=True, force=force)


async def rrsets_changed(uow: UnitOfWork, zone: Zone, keys: list[tuple[str, str]]) -> None:
    """These (absolute name, type) of `zone` changed in this transaction: the next sync sends them."""
    _bump(uow, zone, full=False)
    await queries.mark_pending(uow.session, zone.id, keys, zone.generation)


def _bump(uow: UnitOfWork, zone: Zone, *, full: bool, force: bool = False) -> None:
    """A new generation, and a dns.sync job unless one is already due: a sync sends every change
    pending when it runs, and one that finds newer changes when it finishes enqueues the next,
    so a burst of changes costs a few nameserver writes, not one each. (Both this and the sync's
    last step hold the zone's row, so one of them always sees the other.)"""
    idle = zone.synced_generation >= zone.generation
    zone.generation += 1
    if full:
        zone.full_sync_generation = zone.generation
    if idle or force:
        zone.sync_due_at = utcnow()
        enqueue_sync(uow, zone.name, zone.id)


def enqueue_sync(uow: UnitOfWork, name: str, zone_id: str) -> None:
    """Due after a short gathering window: the changes that come meanwhile (a script setting many
    records, a dashboard save) go to the nameserver in the same write."""
    uow.enqueue(DnsJob.sync, {"zone": name, "zone_id": zone_id}, max_attempts=SYNC_MAX_ATTEMPTS,
                run_at=utcnow() + SYNC_GATHER)
