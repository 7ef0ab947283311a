"""DNS rules: zones of an org (unique across svc, never overlapping another org's), their record
sets (PUT replaces a whole set; SOA and apex NS are svc's), and the DNSSEC state table. Services
flush, never commit.

svc's store is the source of truth: every change bumps the zone's generation and enqueues a
`dns.sync` job in the same transaction (jobs.py converges the nameserver), so an answer means
"stored", and the nameserver follows within one job run, or after an outage, on a retry or the
periodic reconcile."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.exc import IntegrityError

from svc.adapters.nameserver.port import Nameserver, NameserverRefused, NameserverUnavailable
from svc.adapters.nameserver.settings import NameserverSettings
from svc.adapters.resolver.port import Resolver
from svc.adapters.resolver.settings import ResolverSettings
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.dns import delegation, errors, links, published, queries, records, registrar_ds, schemas
from svc.domains.dns.changes import MAX_RRSETS, enqueue_sync, rrsets_changed, zone_changed
from svc.domains.notifications import service as notifications
from svc.domains.orgs import service as orgs
from svc.errors import ServiceUnavailable
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import DnssecState, ManagedBy, RegistrarDs, RRset, Zone
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

# A record svc publishes for one of its own names (publish_managed).
ManagedRecord = published.Wanted

log = logging.getLogger("svc.dns")
T = TypeVar("T")

# The stored SOA is for display and to lock the name: the nameserver owns the real one (it bumps
# the serial on every change), so the sync never sends it.
SOA_TIMERS = "0 10800 3600 604800 300"
GLUE_TYPES = frozenset({"A", "AAAA"})


# --- what every DNS use case needs ---

def nameserver(ctx: AppContext) -> Nameserver:
    """The configured nameserver, or 503 dns_not_configured."""
    found = ctx.adapters.nameserver
    if found is None:
        raise errors.DnsNotConfigured()
    return found


def resolver(ctx: AppContext) -> Resolver:
    """The resolver that stands for the public DNS (ownership and delegation checks), never svc's
    own nameserver unless its zones are trusted (SVC_TRUST_OWN_ZONES)."""
    found = ctx.adapters.resolver
    if found is None:  # svc.app sets one at start; a context built without it cannot check
        raise ServiceUnavailable("No DNS resolver is configured for ownership checks")
    return found


def nameservers(config: Config) -> list[str]:
    """svc's nameserver host names (SVC_NAMESERVERS), absolute and lowercase."""
    return config.settings_of(NameserverSettings).nameserver_names


def _soa(config: Config) -> str:
    ours = config.settings_of(NameserverSettings)
    return f"{ours.nameserver_names[0]} {ours.hostmaster} {SOA_TIMERS}"


def _path_zone(name: str) -> str:
    """The path's {zone} in canonical form (any spelling zone_name accepts); a name that cannot be
    a zone is simply not found."""
    try:
        return records.zone_name(name, field="zone")
    except errors.InvalidDns:
        raise errors.ZoneNotFound(details={"zone": name[:255]}) from None


async def _zone(session: StoreSession, access: OrgAccess, name: str, *, lock: bool = False) -> Zone:
    """The org's zone by the path's {zone}, or 404."""
    canonical = _path_zone(name)
    zone = await queries.zone_by_name(session, canonical, lock=lock)
    if zone is None or zone.org_id != access.org.id:
        raise errors.ZoneNotFound(details={"zone": canonical})
    return zone


async def _detail(uow: UnitOfWork, zone: Zone, *, ask_nameserver: bool) -> schemas.ZoneDetail:
    """The zone as stored; with `ask_nameserver`, the SOA as the nameserver serves it (its serial,
    which it bumps on every change, where the store keeps 0) and, while DNSSEC is on, the DS records
    it computes. The stored SOA stays when the nameserver cannot be asked."""
    rows = await queries.rrsets(uow.session, zone.id)
    base = schemas.Zone.of(zone, nameservers(uow.ctx.config))
    detail = schemas.ZoneDetail(**base.model_dump(), rrsets=[schemas.RRset.of(r, zone.name) for r in rows],
                                ds_records=[])
    if ask_nameserver:
        serial, detail.ds_records = await _served(uow, zone.name, signed=zone.dnssec != DnssecState.off)
        if serial is not None:
            detail.rrsets = [r.model_copy(update={"records": [_with_serial(v, serial) for v in r.records]})
                             if (r.name, r.type) == ("@", "SOA") else r for r in detail.rrsets]
    return detail


def _with_serial(soa: str, serial: int) -> str:
    """An SOA record's text with the serial the nameserver serves (svc stores 0: PowerDNS sets it)."""
    fields = soa.split()
    if len(fields) != 7:
        return soa
    fields[2] = str(serial)
    return " ".join(fields)


async def _served(uow: UnitOfWork, name: str, *, signed: bool) -> tuple[int | None, list[str] | None]:
    """The zone's SOA serial as the nameserver serves it (None when it cannot be asked) and its DS
    records ([] while unsigned, None when it cannot be asked): both asked at once, with nothing of
    the store held meanwhile. Not the zone's record sets: a zone may hold thousands."""
    port = nameserver(uow.ctx)
    await uow.close_reads()
    serial, ds = await asyncio.gather(_asked(port.serial(name), "the zone's serial", name),
                                      _asked(port.ds_records(name), "DS records", name) if signed else _unsigned())
    return serial, ds


async def _asked(call: Awaitable[T], what: str, name: str) -> T | None:
    """The nameserver's answer, or None (logged) when it cannot be asked."""
    try:
        return await call
    except (NameserverUnavailable, NameserverRefused) as exc:
        log.info("%s of %s not available from the nameserver: %s", what, name, type(exc).__name__)
        return None


async def _unsigned() -> list[str]:
    return []


# --- zones ---

async def list_zones(uow: UnitOfWork, access: OrgAccess) -> schemas.ZoneList:
    nameserver(uow.ctx)
    rows = await queries.zones_of_org(uow.session, access.org.id)
    return schemas.ZoneList(zones=[schemas.Zone.of(z, nameservers(uow.ctx.config)) for z in rows])


async def zone_detail(uow: UnitOfWork, access: OrgAccess, name: str) -> schemas.ZoneDetail:
    nameserver(uow.ctx)
    zone = await _zone(uow.session, access, name)
    return await _detail(uow, zone, ask_nameserver=True)


def _check_reserved(config: Config, name: str) -> None:
    """The service's own names (the app domain, its nameservers' domains) are not zones an org may
    hold: a zone there could answer for every project's default hostname, or for svc's NS."""
    own = [config.settings.app_domain.strip().lower().rstrip(".") + ".", *nameservers(config)]
    for reserved in own:
        if records.is_within(name, reserved) or records.is_within(reserved, name):
            raise errors.InvalidDns.of_field("name",
                                             f"must not be, contain or be under the service's own name {reserved}")


@use_case(Tx.READ_THEN_WRITE)  # a contested name is proven in the public DNS with nothing of the store held
async def create_zone(uow: UnitOfWork, access: OrgAccess, name: str) -> schemas.ZoneDetail:
    """Idempotent for the org holding the zone. Another org's zone of that name, or overlapping it
    (a parent or a child: one nameserver answers for both), is 409 zone_taken while the public DNS
    delegates it to svc (its holder controls it). Not delegated, it proves nothing of its holder,
    and the org that proves control of the name in the public DNS takes it over: the TXT record
    `_svc-verify.<zone>` holding the value svc gives this org (in the 409's details.claim)."""
    nameserver(uow.ctx)
    canonical = records.zone_name(name)
    config = uow.ctx.config
    _check_reserved(config, canonical)
    held = await _held_elsewhere(uow.session, access, canonical)
    if held is None:  # the org's own already: unchanged
        existing = await queries.zone_by_name(uow.session, canonical)
        assert existing is not None
        return await _detail(uow, existing, ask_nameserver=False)
    if held:
        await _prove_claim(uow, access, canonical, held)
    else:
        await uow.close_reads()
    session = await uow.begin_write()
    await queries.lock_creation(session)
    # Again, in the write: what was proven against must still be all there is.
    now_held = await _held_elsewhere(session, access, canonical)
    if now_held is None:
        existing = await queries.zone_by_name(session, canonical)
        assert existing is not None
        return await _detail(uow, existing, ask_nameserver=False)
    if {z.id for z in now_held} - {z.id for z in held}:
        raise errors.ZoneTaken(details={"name": canonical})
    for taken in now_held:
        await _release(uow, taken, to=access)
    # Under the org's lock: a concurrent org deletion sees this zone or runs first.
    await orgs.lock_org(uow, access.org.id)
    now = utcnow()
    ns = nameservers(config)
    zone = Zone(id=new_id("zone"), org_id=access.org.id, name=canonical, dnssec=DnssecState.off, ds=[],
                created_at=now, generation=0, synced_generation=0, full_sync_generation=0, sync_due_at=now)
    # A local run: svc's own zones count as delegated (docs/dns.md).
    if config.settings_of(ResolverSettings).trust_own_zones:
        zone.delegated, zone.delegation_checked_at = True, now
    try:
        async with session.begin_nested():
            session.add(zone)
            await session.flush()
    except IntegrityError:  # a concurrent create of the same name won (SQLite needs no lock for it)
        raise errors.ZoneTaken(details={"name": canonical}) from None
    session.add_all([
        RRset(zone_id=zone.id, name=canonical, type="SOA", ttl=records.DEFAULT_TTL, records=[_soa(config)],
              managed_by=ManagedBy.system, updated_at=now),
        RRset(zone_id=zone.id, name=canonical, type="NS", ttl=records.DEFAULT_TTL, records=ns,
              managed_by=ManagedBy.system, updated_at=now),
    ])
    zone_changed(uow, zone)  # its first sync enqueues its delegation check (jobs.sync)
    await record(session, "dns.zone.create", actor=access.principal.user, org=access.org, target=canonical,
                 data={"zone": canonical, **({"tookOver": len(now_held)} if now_held else {})})
    await session.flush()
    return await _detail(uow, zone, ask_nameserver=False)


async def _held_elsewhere(session: StoreSession, access: OrgAccess, canonical: str) -> list[Zone] | None:
    """Other orgs' zones of this name or overlapping it ([] none); None: the org holds it itself."""
    existing = await queries.zone_by_name(session, canonical)
    if existing is not None and existing.org_id == access.org.id:
        return None
    others = [z for z in [existing, *await queries.overlapping(session, canonical)]
              if z is not None and z.org_id != access.org.id]
    return others


async def _prove_claim(uow: UnitOfWork, access: OrgAccess, canonical: str, held: list[Zone]) -> None:
    """Another org holds the name (or one overlapping it): 409 zone_taken, unless none of those
    zones is delegated to svc and this org proves control of the name in the public DNS."""
    wanted = delegation.claim(uow.ctx.keys, access.org.id, canonical)
    overlap = any(z.name != canonical for z in held)
    what = "A zone overlapping this one (a parent or a child)" if overlap else "This zone"
    if any(z.delegated for z in held):
        raise errors.ZoneTaken(f"{what} is held by another org and delegated to svc's nameservers: if the "
                               "domain is yours, move its nameservers away first, or ask that org to delete it",
                               details={"name": canonical})
    await uow.close_reads()
    if not await delegation.proven(resolver(uow.ctx), wanted):
        raise errors.ZoneTaken(
            f"{what} is held by another org, which has not proven it is theirs: to take it over, publish "
            f"TXT {wanted.name.rstrip('.')} \"{wanted.value}\" where the domain's DNS is hosted now, then "
            "create the zone again", details={"name": canonical, "claim": wanted.as_details()})


async def _release(uow: UnitOfWork, zone: Zone, *, to: OrgAccess) -> None:
    """Another org's unproven zone, taken over by an org that proved control of the name: removed
    (the nameserver stops answering it at its next sync), in the holder's audit trail, and its
    admins told."""
    session = uow.session
    holder = await orgs.org_by_id(uow, zone.org_id)
    await queries.delete_rrsets(session, zone.id)
    enqueue_sync(uow, zone.name, zone.id)
    await session.delete(zone)
    if holder is not None:
        await record(session, "dns.zone.delete", actor=None, org=holder, target=zone.name,
                     data={"zone": zone.name, "reason": "taken over by an org that proved control of the name"})
        await notifications.claim_released(
            uow, holder, kind="dns.zone.released",
            message=f"The zone {zone.name.rstrip('.')} was removed from {holder.slug}: another org proved in the "
                    f"public DNS that the domain is theirs, and it was never delegated to svc's nameservers.",
            settings=uow.ctx.settings)
    await session.flush()


async def delete_zone(uow: UnitOfWork, access: OrgAccess, name: str) -> None:
    """The zone and all its rrsets; the job enqueued here removes it at the nameserver."""
    nameserver(uow.ctx)
    session = uow.session
    zone = await _zone(session, access, name, lock=True)
    await queries.delete_rrsets(session, zone.id)
    enqueue_sync(uow, zone.name, zone.id)
    await record(session, "dns.zone.delete", actor=access.principal.user, org=access.org, target=zone.name,
                 data={"zone": zone.name})
    await session.delete(zone)
    await session.flush()


# --- record sets ---

async def _zone_counted(session: StoreSession, access: OrgAccess, name: str) -> tuple[Zone, int]:
    """The org's zone (locked) and how many rrsets it holds, or 404."""
    canonical = _path_zone(name)
    found = await queries.zone_counted(session, canonical)
    if found is None or found[0].org_id != access.org.id:
        raise errors.ZoneNotFound(details={"zone": canonical})
    return found


async def _check_coexistence(session: StoreSession, zone: Zone, name: str, rtype: str, *, others: list[str],
                             cuts: list[str]) -> None:
    """CNAME alone on its name (409 cname_conflict, both ways); a delegated name (NS below the
    apex) holds only NS, and below it only glue (A, AAAA): anything else would never be served.
    `others`: the types `name` holds besides `rtype`; `cuts`: the zone's delegated names."""
    if rtype == "CNAME" and others:
        raise errors.CnameConflict(f"A CNAME cannot share its name with other records ({', '.join(sorted(others))}): "
                                   "delete the other records at that name first, or give the CNAME a name of its own",
                                   details={"name": records.relative(name, zone.name), "types": sorted(others)})
    if "CNAME" in others:
        raise errors.CnameConflict("This name holds a CNAME, which cannot share its name with other records: delete "
                                   "the CNAME first, or use another name",
                                   details={"name": records.relative(name, zone.name), "types": ["CNAME"]})
    if rtype == "NS":
        if others:
            raise errors.InvalidDns.of_field("name", "must not hold other records when it is delegated (NS): "
                                       f"it holds {', '.join(sorted(others))}")
        hidden = [n for n, t in await queries.below(session, zone.id, name) if t not in GLUE_TYPES]
        if hidden:
            raise errors.InvalidDns.of_field("name", "must not be delegated (NS) while names below it hold records "
                                       "other than A or AAAA glue")
        return
    for cut in cuts:
        if cut == name:
            raise errors.InvalidDns.of_field("name", "is delegated (it holds NS): only NS records can be here")
        if name.endswith("." + cut) and rtype not in GLUE_TYPES:
            raise errors.InvalidDns.of_field("name", f"is below the delegated name {records.relative(cut, zone.name)}: "
                                       "only A and AAAA glue can be here")


async def put_rrset(uow: UnitOfWork, access: OrgAccess, zone_name: str, name: str, rtype: str,
                    body: schemas.RRsetPut) -> schemas.RRset:
    """Replace the whole rrset (create it when new). Managed sets: 409 managed_rrset. (Three round
    trips to the store before the writes: a PUT is the API's busiest write, bench/dns_bench.py.)"""
    nameserver(uow.ctx)
    session = uow.session
    zone, count = await _zone_counted(session, access, zone_name)
    rtype = records.record_type(rtype)
    owner = records.owner_name(zone.name, name, rtype)
    nearby = await queries.around(session, zone.id, zone.name, owner)
    at_owner = {r.type: r for r in nearby if r.name == owner}
    row = at_owner.get(rtype)
    if row is not None and row.managed_by is not None:
        raise errors.ManagedRRset(details={"name": records.relative(owner, zone.name), "type": rtype,
                                           "managed_by": row.managed_by})
    ttl = body.ttl if body.ttl is not None else (row.ttl if row is not None else records.DEFAULT_TTL)
    data = records.rrset(zone.name, owner, rtype, ttl, list(body.records))
    cuts = sorted(r.name for r in nearby if r.type == "NS" and r.name != zone.name)
    await _check_coexistence(session, zone, owner, rtype, others=[t for t in at_owner if t != rtype], cuts=cuts)
    now = utcnow()
    if row is None:
        if count >= MAX_RRSETS:
            raise errors.InvalidDns.of_field("name", f"cannot be added: a zone holds at most {MAX_RRSETS} record sets")
        row = RRset(zone_id=zone.id, name=owner, type=rtype, ttl=data.ttl, records=list(data.records),
                    managed_by=None, updated_at=now)
        session.add(row)
    elif row.ttl == data.ttl and list(row.records) == list(data.records):
        return schemas.RRset.of(row, zone.name)  # the same content again: nothing changes, nothing to send
    else:
        row.ttl = data.ttl
        row.records = list(data.records)
        row.updated_at = now
    await rrsets_changed(uow, zone, [(owner, rtype)])
    relative = records.relative(owner, zone.name)
    await record(session, "dns.rrset.set", actor=access.principal.user, org=access.org,
                 target=f"{zone.name}/{relative}/{rtype}",
                 data={"zone": zone.name, "name": relative, "type": rtype, "ttl": data.ttl,
                       "records": len(data.records)})
    await session.flush()
    return schemas.RRset.of(row, zone.name)


async def delete_rrset(uow: UnitOfWork, access: OrgAccess, zone_name: str, name: str, rtype: str) -> None:
    nameserver(uow.ctx)
    session = uow.session
    zone = await _zone(session, access, zone_name, lock=True)
    rtype = records.record_type(rtype)
    owner = records.owner_name(zone.name, name, rtype)
    row = await queries.rrset(session, zone.id, owner, rtype)
    relative = records.relative(owner, zone.name)
    if row is None:
        raise errors.RRsetNotFound(details={"name": relative, "type": rtype})
    if row.managed_by is not None:
        raise errors.ManagedRRset(details={"name": relative, "type": rtype, "managed_by": row.managed_by})
    await session.delete(row)
    await rrsets_changed(uow, zone, [(owner, rtype)])
    await record(session, "dns.rrset.delete", actor=access.principal.user, org=access.org,
                 target=f"{zone.name}/{relative}/{rtype}", data={"zone": zone.name, "name": relative, "type": rtype})
    await session.flush()


# --- DNSSEC (the spec's state table) ---

async def set_dnssec(uow: UnitOfWork, access: OrgAccess, zone_name: str, enabled: bool) -> schemas.Zone:
    """Enable: off -> signing (the nameserver makes and keeps the keys); already on: unchanged.
    Disable: any -> off, the recorded DS deleted (the next enable makes a new key, so the old DS
    would be wrong at the parent anyway).

    A domain bought through svc (zone.registrar_ds set): svc is the registrar's client, so it feeds
    the parent itself, by a job enqueued here, in the switch's transaction (registrar_ds.py):
    enabling sends the nameserver's DS to the registrar; disabling removes it there **first**, and
    the zone stays signed (the sync keeps the keys) until the parent no longer serves it: a DS at
    the parent with no signed zone beneath breaks resolution."""
    nameserver(uow.ctx)
    session = uow.session
    zone = await _zone(session, access, zone_name, lock=True)
    before = DnssecState(zone.dnssec)
    if enabled and before is DnssecState.off:
        zone.dnssec = DnssecState.signing
        if zone.registrar_ds is not None:
            registrar_ds.send(uow, zone)
    elif not enabled and (before is not DnssecState.off or zone.ds):
        zone.dnssec = DnssecState.off
        zone.ds = []
        if zone.registrar_ds is not None:
            registrar_ds.withdraw(uow, zone)
    else:
        return schemas.Zone.of(zone, nameservers(uow.ctx.config))
    zone_changed(uow, zone)
    await record(session, "dns.dnssec.enable" if enabled else "dns.dnssec.disable", actor=access.principal.user,
                 org=access.org, target=zone.name, data={"zone": zone.name, "from": before.value, "to": zone.dnssec})
    await session.flush()
    return schemas.Zone.of(zone, nameservers(uow.ctx.config))


async def set_ds(uow: UnitOfWork, access: OrgAccess, zone_name: str, ds: list[str]) -> schemas.Zone:
    """Record the DS the owner registered at the parent (svc does not query the parent). Off: 409
    dnssec_off. A non-empty list: ds_pending. An empty list records none: signing stays signing,
    and a zone past it returns to signing (decided here: the spec leaves it unsaid). A domain
    bought through svc: 409 ds_managed (svc sends its DS itself)."""
    nameserver(uow.ctx)
    session = uow.session
    zone = await _zone(session, access, zone_name, lock=True)
    if zone.dnssec == DnssecState.off:
        raise errors.DnssecOff(details={"zone": zone.name})
    if zone.registrar_ds is not None:
        raise errors.DsByRegistrar(details={"zone": zone.name, "registrarDs": zone.registrar_ds})
    checked = records.ds_records(ds)
    if checked:
        zone.dnssec = DnssecState.ds_pending
    else:
        zone.dnssec = DnssecState.signing
    # The nameserver needs nothing from this (a DS lives at the parent): no sync job.
    zone.ds = checked
    await record(session, "dns.dnssec.ds", actor=access.principal.user, org=access.org, target=zone.name,
                 data={"zone": zone.name, "ds": len(checked), "state": zone.dnssec})
    await session.flush()
    return schemas.Zone.of(zone, nameservers(uow.ctx.config))


# --- what the hostnames area asks of DNS ---

async def link_host(uow: UnitOfWork, org_id: str, host: str, target: str) -> str:
    """The project link of a custom hostname added in the org's own zone (a CNAME to `target`,
    managed_by "project"; links.py): what was done, "created", "exists", "apex", "occupied" or
    "no_zone". Call in the hostname's write transaction."""
    return (await links.link(uow, org_id, host, target)).value


async def unlink_host(uow: UnitOfWork, org_id: str, host: str) -> bool:
    """The project link of a removed hostname, removed while it still is one; whether it was."""
    return await links.unlink(uow, org_id, host)


# --- what other areas publish for svc's own names (the mail domain's records) ---

async def publish_managed(uow: UnitOfWork, domain: str, wanted: list[ManagedRecord], managed_by: str) -> bool:
    """`wanted` in the zone of the store holding `domain`, managed by `managed_by` (published.py);
    whether all of them are in place. Call in a write transaction."""
    placed = await published.publish(uow, domain, wanted, managed_by)
    return len(placed) == len(wanted)


async def zone_holding(uow: UnitOfWork, domain: str) -> str | None:
    """The zone of the store that holds `domain` (the closest), whichever org holds it."""
    zone = await queries.closest_zone(uow.session, links.absolute(domain))
    return zone.name if zone is not None else None


async def managed_zone(uow: UnitOfWork, domain: str, wanted: list[ManagedRecord], managed_by: str) -> str | None:
    """The zone holding `domain` when all of `wanted` are in it (published), else None."""
    zone = await published.in_place(uow, domain, wanted, managed_by)
    return zone.name if zone is not None else None


# --- delegation ---

@use_case(Tx.READ_THEN_WRITE)  # the public DNS is asked with nothing of the store held
async def check_delegation(uow: UnitOfWork, access: OrgAccess, name: str) -> schemas.Zone:
    """Ask the public DNS now whether it delegates the zone to svc's nameservers (the cycle does it
    every SVC_DELEGATION_RECHECK_SECONDS), and, for a bought domain whose DS svc sent to (or removed
    at) the registrar, whether the parent serves it."""
    nameserver(uow.ctx)
    zone = await _zone(uow.session, access, name)
    watched = registrar_ds.watched(zone)  # a bought domain's DS: does the parent serve it (or still)?
    await uow.close_reads()
    config = uow.ctx.config
    trusted = config.settings_of(ResolverSettings).trust_own_zones
    seen = await delegation.check(resolver(uow.ctx), zone.name, nameservers(config), trusted=trusted)
    parent_ds = await resolver(uow.ctx).ds(zone.name) if watched and not trusted else None
    session = await uow.begin_write()
    current = await queries.zone_for_update(session, zone.id)
    if current is None:
        raise errors.ZoneNotFound(details={"zone": zone.name})
    delegation.note(current, seen)
    if watched and registrar_ds.watched(current):
        registrar_ds.parent_seen(uow, current, parent_ds)
    await session.flush()
    return schemas.Zone.of(current, nameservers(config))


# --- what the hostnames area asks of DNS ---

@dataclass(frozen=True)
class Cover:
    """The zone on svc holding a host, of the host's own org: whether the public DNS delegates it to
    svc (then it proves the host is the org's), and, when not, why in words."""

    zone: str
    delegated: bool
    why_not: str | None


async def covering_zones(uow: UnitOfWork, wanted: list[tuple[str, str]]) -> dict[str, Cover]:
    """Of (host, org id) pairs, the hosts inside a zone of their own org, in one query. The closest
    zone decides: zones of different orgs never overlap."""
    owners = await queries.zone_owners(uow.session, [name for host, _ in wanted for name in records.enclosing(host)])
    covered: dict[str, Cover] = {}
    for host, org_id in wanted:
        for name in records.enclosing(host):
            if name in owners:
                owner, delegated, seen = owners[name]
                if owner == org_id:
                    covered[host] = Cover(zone=name, delegated=delegated,
                                          why_not=None if delegated else delegation.not_delegated(name, seen))
                break
    return covered


def claim(uow: UnitOfWork, org_id: str, name: str) -> delegation.Claim:
    """The TXT record that proves, in the public DNS, that the org controls `name`."""
    return delegation.claim(uow.ctx.keys, org_id, name)


async def claim_proven(uow: UnitOfWork, wanted: delegation.Claim) -> bool:
    """Whether the public DNS answers the claim's TXT (call with nothing of the store held)."""
    return await delegation.proven(resolver(uow.ctx), wanted)


# --- for the domains area (a bought or imported domain gets its zone here) ---

def canonical_zone_name(text: str, *, field: str = "name") -> str:
    """A zone name as written -> "example.com." (a 400 naming `field` otherwise)."""
    return records.zone_name(text, field=field)


async def held_by_another_org(uow: UnitOfWork, access: OrgAccess, name: str) -> bool:
    """Another org holds a zone of this name, or one overlapping it."""
    return bool(await _held_elsewhere(uow.session, access, records.zone_name(name)))


async def mark_delegated(uow: UnitOfWork, org_id: str, name: str) -> None:
    """The org's zone counts as delegated: svc set the domain's NS at the registrar itself (a
    purchase), so no check of the public DNS has to find it first. Its DS is svc's to send from
    now on (registrar_ds.py): at once when the zone is signed already."""
    zone = await queries.zone_by_name(uow.session, records.zone_name(name), lock=True)
    if zone is not None and zone.org_id == org_id:
        zone.delegated, zone.delegation_checked_at, zone.delegation_seen = True, utcnow(), None
        if zone.registrar_ds is None:
            zone.registrar_ds = RegistrarDs.none
            if zone.dnssec != DnssecState.off:
                registrar_ds.send(uow, zone)
        await uow.session.flush()


async def registrar_released(uow: UnitOfWork, name: str) -> None:
    """The registrar's account no longer holds the domain (transferred away): its DS is its
    owner's business again, and svc stops feeding it."""
    zone = await queries.zone_by_name(uow.session, records.zone_name(name), lock=True)
    if zone is not None and zone.registrar_ds is not None:
        registrar_ds.released(uow, zone)
        await uow.session.flush()
