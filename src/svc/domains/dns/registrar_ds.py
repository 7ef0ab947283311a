"""The DS of a domain bought through svc, fed to the parent by svc itself: svc is the registrar's
client there, so the owner has nothing to register (docs/dns.md "DNSSEC").

The zone's `registrar_ds` (states.RegistrarDs) says where the DS stands at the registrar; None is
a domain registered elsewhere (its owner registers the DS and records it with PUT dnssec/ds).

    DNSSEC on:  none -> sending --job: the nameserver's DS set at the registrar--> sent
                sent --the parent serves it (the delegation check)--> published (DNSSEC active)
    DNSSEC off: sending|sent|published -> removing --job: none left at the registrar--> withdrawn
                withdrawn --the parent no longer serves a DS--> none, and only then is the zone unsigned

Order matters when turning it off: a DS at the parent over a zone no longer signed makes every
validating resolver refuse the zone's answers. So the zone stays signed (`signed()`: the sync keeps
its keys) through removing and withdrawn. Each write to the registrar is a job enqueued in the
transaction of the change that needs it (`send`, `withdraw`), retried with the queue's backoff: an
outage of the registrar delays, never loses. A job that finds the state moved on meanwhile does
nothing: the change that moved it enqueued its own."""

from __future__ import annotations

import logging

from svc.adapters.registrar.port import NotInAccount
from svc.adapters.resolver.port import Lookup, Outcome
from svc.domains.dns import queries, records
from svc.domains.dns.changes import zone_changed
from svc.domains.dns.kinds import DnsJob
from svc.jobs.registry import JobRun
from svc.models import DnssecState, RegistrarDs, Zone
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.dns")

# Retried with the queue's backoff (capped at an hour) for about a day, like a zone's sync.
MAX_ATTEMPTS = 30
# What the delegation check asks the parent about.
WATCHED = frozenset({RegistrarDs.sent, RegistrarDs.withdrawn})


class NotSignedYet(Exception):
    """The nameserver has no DS for the zone yet (its sync has not signed it): retried."""


def signed(zone: Zone) -> bool:
    """Whether the nameserver signs the zone: DNSSEC on, or off while a DS may still be at the parent."""
    return zone.dnssec != DnssecState.off or zone.registrar_ds in (RegistrarDs.removing, RegistrarDs.withdrawn)


def _enqueue(uow: UnitOfWork, zone: Zone) -> None:
    uow.enqueue(DnsJob.registrar_ds, {"zone_id": zone.id}, max_attempts=MAX_ATTEMPTS)


def send(uow: UnitOfWork, zone: Zone) -> None:
    """DNSSEC turned on: send the nameserver's DS to the registrar (in the switch's transaction)."""
    zone.registrar_ds = RegistrarDs.sending
    _enqueue(uow, zone)


def withdraw(uow: UnitOfWork, zone: Zone) -> None:
    """DNSSEC turned off: remove the DS at the registrar before the zone is unsigned."""
    if zone.registrar_ds in (RegistrarDs.none, RegistrarDs.withdrawn):
        return  # nothing at the registrar (withdrawn: the cycle unsigns once the parent is clear)
    zone.registrar_ds = RegistrarDs.removing
    _enqueue(uow, zone)


def released(uow: UnitOfWork, zone: Zone) -> None:
    """The domain left the registrar's account: its DS is its owner's again. A zone kept signed
    only for the DS svc had sent is unsigned now (svc can no longer remove that DS)."""
    keep_signed = zone.dnssec != DnssecState.off
    was_signed = signed(zone)
    zone.registrar_ds = None
    if was_signed and not keep_signed:
        zone_changed(uow, zone)


def _bare(zone: str) -> str:
    return zone.rstrip(".")


@use_case(Tx.READ_THEN_WRITE)  # the nameserver and the registrar are asked with nothing of the store held
async def run_job(run: JobRun) -> None:
    """Make the registrar's DS for the zone what its state asks: the nameserver's (sending), or
    none (removing); then record it, and have the parent checked at once."""
    zone = await queries.zone_by_id(run.session, str(run.payload.get("zone_id")))
    if zone is None or zone.registrar_ds not in (RegistrarDs.sending, RegistrarDs.removing):
        return
    zone_id, name, state = zone.id, zone.name, RegistrarDs(zone.registrar_ds)
    registrar, nameserver = run.ctx.adapters.registrar, run.ctx.adapters.nameserver
    if registrar is None or nameserver is None:
        raise RuntimeError("no registrar or no nameserver is configured: the DS waits for them")
    await run.uow.close_reads()
    wanted: list[str] = []
    if state is RegistrarDs.sending:
        wanted = await nameserver.ds_records(name)
        if not wanted:
            raise NotSignedYet(f"{_bare(name)} is not signed by the nameserver yet")
    try:
        held: list[str] | None = await registrar.set_ds(_bare(name), wanted)
    except NotInAccount:
        held = None
    session = await run.uow.begin_write()
    current = await queries.zone_for_update(session, zone_id)
    if current is None or current.registrar_ds != state:
        return  # deleted, or switched again meanwhile: that change enqueued its own job
    if held is None:
        log.info("%s left the registrar's account: its DS is its owner's again", _bare(name))
        released(run.uow, current)
    elif state is RegistrarDs.sending:
        current.registrar_ds, current.ds = RegistrarDs.sent, records.ds_records(list(held))
        if current.dnssec == DnssecState.signing:
            current.dnssec = DnssecState.ds_pending
    else:
        current.registrar_ds = RegistrarDs.withdrawn
    await session.flush()
    if current.registrar_ds in WATCHED:
        run.uow.enqueue(DnsJob.delegation, {"zone_id": zone_id}, max_attempts=1)


def watched(zone: Zone) -> bool:
    return zone.registrar_ds in WATCHED


def parent_seen(uow: UnitOfWork, zone: Zone, lookup: Lookup | None) -> None:
    """What the parent serves as the zone's DS (`lookup`; None: trusted, no public DNS to ask, so
    it serves what the registrar holds): sent -> published once it serves one of the zone's;
    withdrawn -> none once it serves none, and the zone is unsigned then."""
    if zone.registrar_ds == RegistrarDs.sent:
        if lookup is None or _serves(lookup, zone.ds or []):
            zone.registrar_ds = RegistrarDs.published
            if zone.dnssec in (DnssecState.signing, DnssecState.ds_pending):
                zone.dnssec = DnssecState.active
    elif zone.registrar_ds == RegistrarDs.withdrawn:
        if lookup is None or lookup.outcome in (Outcome.no_answer, Outcome.nxdomain):
            zone.registrar_ds = RegistrarDs.none
            zone_changed(uow, zone)  # the sync unsigns it now


def _serves(lookup: Lookup, ours: list[str]) -> bool:
    if lookup.outcome is not Outcome.found:
        return False
    wanted = {_normal(d) for d in ours}
    return any(_normal(v) in wanted for v in lookup.values)


def _normal(ds: str) -> str:
    parts = ds.split()
    return " ".join([*parts[:3], "".join(parts[3:]).upper()])
