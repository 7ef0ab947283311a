"""Converging the nameserver to the store.

`dns.sync` (enqueued in a change's transaction when no sync is already due; changes.py):
reads what is pending as the store has it, gives the store back, sends it to the nameserver in ONE
apply, then records how far the nameserver got. Two ways:
- the changed record sets only (dns_pending: REPLACE with the stored content, DELETE when the row
  is gone): its cost follows the change, not the zone's size;
- the whole zone, when a change the keys cannot express is pending (the zone made, DNSSEC switched,
  drift found) or the nameserver lacks the zone: read it at the nameserver and send only the
  differences (PowerDNS bumps the SOA serial even on a no-op write), then DNSSEC on or off.
A zone gone from the store is deleted at the nameserver. NameserverUnavailable is raised on: the
queue retries with backoff, and changes made meanwhile wait in dns_pending for that retry. A sync
that finds newer changes when it records its progress enqueues the next.

Syncs run one at a time in a process (the worker runs its batch in order). Two svc processes on one
PostgreSQL may sync one zone at once and apply out of order; the reconcile repairs that.

`dns.reconcile` (a cycle): compares every zone of the store with the nameserver and enqueues a
whole-zone sync for each that drifted (a zone deleted or edited behind svc's back comes back as
stored). Zones with a sync under way are left to it (unless it has been under way for long: its
job ran out of attempts). Zones the nameserver serves that the store does not know are left alone,
on purpose: an external PowerDNS may serve the operator's own zones, and the nameserver cannot tell
which zones svc made. A zone deleted in svc is removed by its own sync job, retried for about a day
(changes.py SYNC_MAX_ATTEMPTS).

`dns.delegation` (a cycle, and a job a new zone's first sync enqueues, once svc serves it): asks the
public DNS whether it delegates a zone to svc's nameservers (delegation.py), for the zones checked
longest ago; for a bought domain whose DS svc sent to (or removed at) the registrar, also whether
the parent serves it (registrar_ds.py).

`dns.registrar_ds` (registrar_ds.py): a bought domain's DS set at the registrar, or removed there.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import timedelta

from svc.adapters.nameserver.port import (
    Nameserver,
    NameserverRefused,
    NameserverZoneMissing,
    RRsetData,
    ZoneState,
)
from svc.adapters.nameserver.settings import NameserverSettings
from svc.adapters.resolver.port import Lookup
from svc.adapters.resolver.settings import ResolverSettings
from svc.domains.dns import delegation, queries, records, registrar_ds
from svc.domains.dns.changes import enqueue_sync, zone_changed
from svc.domains.dns.kinds import DnsJob
from svc.domains.dns.settings import DnsSettings
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import Zone
from svc.settings import Config
from svc.uow import Tx, unit_of_work, use_case

log = logging.getLogger("svc.dns")

RECONCILE_SECONDS = 60.0
# A zone whose sync has been due for longer than this is checked by the reconcile even so.
SYNC_UNDER_WAY = timedelta(minutes=10)
# Record sets the nameserver makes itself: the SOA (it owns the serial) and what signing adds.
NAMESERVER_OWN = frozenset({"SOA", "DNSKEY", "RRSIG", "NSEC", "NSEC3", "NSEC3PARAM", "CDS", "CDNSKEY"})

Key = tuple[str, str]


# The delegation cycle's rounds, and how many zones one round checks (the oldest checked first).
DELEGATION_SECONDS = 60.0
DELEGATION_BATCH = 50
DELEGATION_AT_ONCE = 8


def register(registry: JobRegistry, config: Config) -> None:
    registry.handler(DnsJob.sync, sync)
    registry.cycle(DnsJob.reconcile, RECONCILE_SECONDS, reconcile)
    registry.cycle(DnsJob.delegation, DELEGATION_SECONDS, check_delegations)
    registry.handler(DnsJob.registrar_ds, registrar_ds.run_job)


@use_case(Tx.READ_THEN_WRITE)  # the public DNS is asked with nothing of the store held
async def check_delegations(run: JobRun) -> None:
    """One zone (a new zone's own job: {"zone_id"}), or the cycle's batch of the zones whose check
    is older than SVC_DELEGATION_RECHECK_SECONDS."""
    resolver = run.ctx.adapters.resolver
    if resolver is None:
        return
    zone_id = run.payload.get("zone_id")
    if isinstance(zone_id, str):
        zone = await queries.zone_by_id(run.session, zone_id)
        due = [(zone.id, zone.name)] if zone is not None else []
    else:
        before = utcnow() - timedelta(seconds=run.ctx.settings_of(DnsSettings).delegation_recheck_seconds)
        due = await queries.delegation_due(run.session, before, DELEGATION_BATCH)
    if not due:
        return
    # A bought domain's DS sent to (or removed at) the registrar: is the parent serving it?
    watched = {z.id for z in await queries.zones_by_ids(run.session, [i for i, _ in due]) if registrar_ds.watched(z)}
    await run.uow.close_reads()
    at_once = asyncio.Semaphore(DELEGATION_AT_ONCE)
    ours = run.ctx.settings_of(NameserverSettings).nameserver_names
    trusted = run.ctx.settings_of(ResolverSettings).trust_own_zones

    async def one(name: str) -> delegation.Seen:
        async with at_once:
            return await delegation.check(resolver, name, ours, trusted=trusted)

    async def parent_ds(zone_id: str, name: str) -> Lookup | None:
        if trusted or zone_id not in watched:
            return None
        async with at_once:
            return await resolver.ds(name)

    seen = await asyncio.gather(*(one(name) for _, name in due))
    ds_seen = await asyncio.gather(*(parent_ds(i, name) for i, name in due))
    session = await run.uow.begin_write()
    for (checked_id, _), found, ds_found in zip(due, seen, ds_seen, strict=True):
        zone = await queries.zone_for_update(session, checked_id)
        if zone is not None:  # deleted meanwhile: nothing to record
            delegation.note(zone, found)
            if checked_id in watched and registrar_ds.watched(zone):
                registrar_ds.parent_seen(run.uow, zone, ds_found)  # None: trusted, no public DNS to ask
    await session.flush()


@dataclass(frozen=True)
class Desired:
    """A zone as the store has it, in the nameserver's terms."""

    name: str
    zone_id: str
    generation: int
    dnssec: bool
    rrsets: dict[Key, RRsetData]

    @property
    def nameservers(self) -> list[str]:
        apex_ns = self.rrsets.get((self.name, "NS"))
        return list(apex_ns.records) if apex_ns else []


def _data(name: str, rtype: str, ttl: int, contents: list[str]) -> RRsetData:
    return RRsetData(name=name, type=rtype, ttl=ttl, records=tuple(contents))


async def desired_of(session: StoreSession, zone: Zone) -> Desired:
    sets = {(n, t): _data(n, t, ttl, recs) for n, t, ttl, recs in await queries.contents(session, zone.id)
            if t not in NAMESERVER_OWN}
    return Desired(name=zone.name, zone_id=zone.id, generation=zone.generation,
                   dnssec=registrar_ds.signed(zone), rrsets=sets)


async def desired(session: StoreSession, name: str) -> Desired | None:
    zone = await queries.zone_by_name(session, name)
    return None if zone is None else await desired_of(session, zone)


def _normal(rrset: RRsetData) -> tuple[int, frozenset[str]]:
    contents = (c.lower() if rrset.type in records.NAME_TYPES else c for c in rrset.records)
    return rrset.ttl, frozenset(contents)


def differences(want: Desired, have: ZoneState) -> tuple[list[RRsetData], list[Key]]:
    """(rrsets to replace, (name, type) to delete) that take the nameserver's zone to `want`."""
    held = {(r.name.lower(), r.type.upper()): r for r in have.rrsets if r.type.upper() not in NAMESERVER_OWN}
    replace = [r for key, r in want.rrsets.items() if key not in held or _normal(held[key]) != _normal(r)]
    delete = sorted(key for key in held if key not in want.rrsets)
    return sorted(replace, key=lambda r: (r.name, r.type)), delete


def drifted(want: Desired, have: ZoneState | None) -> bool:
    if have is None:
        return True
    replace, delete = differences(want, have)
    return bool(replace or delete) or have.dnssec != want.dnssec


async def converge(port: Nameserver, name: str, want: Desired | None) -> bool:
    """Bring the nameserver's `name` to `want` (None: the zone is gone). True when anything was sent."""
    if want is None:
        await port.delete_zone(name)
        return True
    have = await port.zone(name)
    sent = False
    if have is None:
        await port.ensure_zone(name, nameservers=want.nameservers)
        sent = True
        have = await port.zone(name) or ZoneState(name=name, rrsets=(), dnssec=False)
    replace, delete = differences(want, have)
    if replace or delete:
        await port.apply(name, replace=replace, delete=delete)
        sent = True
    if have.dnssec != want.dnssec:
        await port.set_dnssec(name, enabled=want.dnssec)
        sent = True
    return sent


@dataclass(frozen=True)
class Changes:
    """The pending record-set changes of a zone, as read from the store."""

    keys: list[tuple[str, str, int]]
    replace: list[RRsetData]
    delete: list[Key]


async def _changes(session: StoreSession, zone: Zone) -> Changes:
    keys = await queries.pending(session, zone.id)
    wanted = {(n, t) for n, t, _ in keys}
    stored = {(n, t): _data(n, t, ttl, recs)
              for n, t, ttl, recs in await queries.contents(session, zone.id, sorted({n for n, _ in wanted}))
              if (n, t) in wanted}
    return Changes(keys=keys, replace=[stored[k] for k in sorted(stored)],
                   delete=sorted(k for k in wanted if k not in stored))


@use_case(Tx.READ_THEN_WRITE)  # the nameserver is written with nothing of the store held
async def sync(run: JobRun) -> None:
    name = str(run.payload["zone"])
    port = run.ctx.adapters.nameserver
    if port is None:
        log.warning("dns.sync %s: no nameserver is configured; the reconcile converges it once one is", name)
        return
    zone = await queries.zone_by_name(run.session, name)
    if zone is None:
        await run.uow.close_reads()
        await port.delete_zone(name)
        log.info("dns.sync %s: deleted at the nameserver", name)
        return
    if zone.synced_generation >= zone.generation:
        # An earlier sync already sent everything (also when the zone was deleted and made again
        # meanwhile: then this job's deletion is moot, and the new zone's own sync ran).
        return
    generation, zone_id = zone.generation, zone.id
    # Its first sync: the zone is served from now on, and only now can the public DNS answer for it.
    first = zone.synced_generation == 0
    full = zone.full_sync_generation > zone.synced_generation
    changes = None if full else await _changes(run.session, zone)
    want = await desired_of(run.session, zone) if full else None
    await run.uow.close_reads()
    try:
        if changes is not None:
            try:
                await port.apply(name, replace=changes.replace, delete=changes.delete)
            except NameserverZoneMissing:
                full = True  # the nameserver lost the zone: send all of it
                async with unit_of_work(run.ctx, Tx.READ) as uow:
                    want = await desired(uow.session, name)
        if full:
            await converge(port, name, want)
    except NameserverRefused as exc:
        # svc's validation let something through the nameserver refuses: a bug. Retrying cannot
        # help, and holding the zone's later changes back would not either: the progress is
        # recorded, and the reconcile reports the drift (and tries again) each cycle.
        log.error("dns.sync %s: the nameserver refused the change: %s", name, exc)
    session = await run.uow.begin_write()
    current = await queries.zone_for_update(session, zone_id)
    if current is None:
        return  # deleted meanwhile: its own sync removes it
    await queries.record_synced(session, zone_id, generation)
    if full:
        await queries.clear_all_pending(session, zone_id, generation)
    elif changes is not None:
        await queries.clear_pending(session, zone_id, changes.keys)
    if current.generation > generation:
        enqueue_sync(run.uow, name, zone_id)  # changes that came while this one was sending
    if first and not run.ctx.settings_of(ResolverSettings).trust_own_zones:
        # A new zone's delegation is checked once svc's nameservers serve it: before, a resolver
        # that follows the delegation is refused, and the check could not tell.
        run.uow.enqueue(DnsJob.delegation, {"zone_id": zone_id}, max_attempts=1)


@use_case(Tx.READ_THEN_WRITE)
async def reconcile(run: JobRun) -> None:
    port = run.ctx.adapters.nameserver
    if port is None:
        return
    zones = [(z.name, z.synced_generation < z.generation and z.sync_due_at > utcnow() - SYNC_UNDER_WAY)
             for z in await queries.all_zones(run.session)]
    await run.uow.close_reads()
    served = set(await port.zone_names())
    repair: list[str] = []
    for name, under_way in zones:
        if under_way:
            continue  # its sync is due: comparing now would find the change it is about to send
        # One short read per zone: a large zone's rows are not held across the nameserver call.
        async with unit_of_work(run.ctx, Tx.READ) as uow:
            want = await desired(uow.session, name)
        if want is None:
            continue  # deleted meanwhile; its own job removes it
        have = await port.zone(name) if name in served else None
        if drifted(want, have):
            repair.append(name)
    unknown = served - {name for name, _ in zones}
    if unknown:
        log.debug("dns.reconcile: %d zones at the nameserver are not svc's; left alone", len(unknown))
    if not repair:
        return
    session = await run.uow.begin_write()
    for name in repair:
        zone = await queries.zone_by_name(session, name, lock=True)
        if zone is None:
            continue
        log.warning("dns.reconcile: zone %s drifted at the nameserver; converging it again", name)
        zone_changed(run.uow, zone, force=True)
