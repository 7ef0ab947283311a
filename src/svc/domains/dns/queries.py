"""SQL for DNS zones and record sets."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, func, or_, select, text, update

from svc.db import dialect_insert, is_postgres
from svc.domains.dns.records import enclosing
from svc.kit.store_session import StoreSession
from svc.models import PendingChange, RRset, Zone

# pg_advisory_xact_lock key serialising zone creation: the overlap rule reads other rows than the
# one it writes, which no row lock covers. Zones are created rarely; one lock is enough.
_CREATE_LOCK = 0x646E_737A  # "dnsz"


async def lock_creation(session: StoreSession) -> None:
    """PostgreSQL: serialise zone creations; SQLite: write transactions are already serial."""
    if is_postgres(session):
        await session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _CREATE_LOCK})


async def zone_by_name(session: StoreSession, name: str, *, lock: bool = False) -> Zone | None:
    stmt = select(Zone).where(Zone.name == name)
    if lock:
        # Every change of a zone locks its row: changes of one zone (and the CNAME rules across
        # its rrsets) are serial, as they are on SQLite.
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt)).first()


async def zone_counted(session: StoreSession, name: str) -> tuple[Zone, int] | None:
    """The zone (locked on PostgreSQL, as zone_by_name with lock) and how many rrsets it holds, in
    one round trip: a record-set change needs both."""
    counted = select(func.count()).select_from(RRset).where(RRset.zone_id == Zone.id).scalar_subquery()
    stmt = select(Zone, counted).where(Zone.name == name).with_for_update(of=Zone)
    row = (await session.execute(stmt)).first()
    return None if row is None else (row[0], int(row[1]))


async def around(session: StoreSession, zone_id: str, apex: str, name: str) -> list[RRset]:
    """What a change of `name` must be checked against, in one round trip: every rrset at `name`
    (any type) and the zone's delegations (NS below the apex)."""
    stmt = select(RRset).where(RRset.zone_id == zone_id, or_(
        RRset.name == name, and_(RRset.type == "NS", RRset.name != apex)))
    return list((await session.scalars(stmt)).all())


async def zone_for_update(session: StoreSession, zone_id: str) -> Zone | None:
    """The zone's row as it is now (not as the session saw it earlier), locked on PostgreSQL."""
    stmt = select(Zone).where(Zone.id == zone_id).execution_options(populate_existing=True).with_for_update()
    return (await session.scalars(stmt)).first()


async def zone_owners(session: StoreSession, names: list[str]) -> dict[str, tuple[str, bool, str | None]]:
    """{zone name: (org id, delegated, what the public DNS answered)} of the zones among `names`
    (absolute names), in one query per 500."""
    found: dict[str, tuple[str, bool, str | None]] = {}
    unique = sorted(set(names))
    for i in range(0, len(unique), 500):
        rows = await session.execute(select(Zone.name, Zone.org_id, Zone.delegated, Zone.delegation_seen)
                                     .where(Zone.name.in_(unique[i:i + 500])))
        found.update({name: (org, bool(delegated), seen) for name, org, delegated, seen in rows.all()})
    return found


async def delegation_due(session: StoreSession, before: datetime, limit: int) -> list[tuple[str, str]]:
    """(id, name) of zones whose delegation was last checked before `before` (or never), the
    longest unchecked first."""
    rows = await session.execute(
        select(Zone.id, Zone.name)
        .where(or_(Zone.delegation_checked_at.is_(None), Zone.delegation_checked_at < before))
        .order_by(Zone.delegation_checked_at.asc().nulls_first(), Zone.name).limit(limit))
    return [(zone_id, name) for zone_id, name in rows.all()]


async def closest_zone(session: StoreSession, name: str, *, lock: bool = False) -> Zone | None:
    """The zone holding `name` (the closest of its enclosing names that is a zone), in one query;
    locked on PostgreSQL with `lock`."""
    stmt = select(Zone).where(Zone.name.in_(enclosing(name)))
    if lock:
        stmt = stmt.with_for_update()
    zones = list((await session.scalars(stmt)).all())
    return max(zones, key=lambda z: len(z.name), default=None)


async def overlapping(session: StoreSession, name: str) -> list[Zone]:
    """Zones that are `name`'s parents or children (not `name` itself)."""
    parents = enclosing(name)[1:]
    escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    stmt = select(Zone).where(or_(Zone.name.in_(parents), Zone.name.like("%." + escaped, escape="\\")))
    return list((await session.scalars(stmt)).all())


async def zones_of_org(session: StoreSession, org_id: str) -> list[Zone]:
    return list((await session.scalars(select(Zone).where(Zone.org_id == org_id).order_by(Zone.name))).all())


async def all_zones(session: StoreSession) -> list[Zone]:
    return list((await session.scalars(select(Zone).order_by(Zone.name))).all())


async def rrsets(session: StoreSession, zone_id: str) -> list[RRset]:
    return list((await session.scalars(
        select(RRset).where(RRset.zone_id == zone_id).order_by(RRset.name, RRset.type))).all())


async def rrset(session: StoreSession, zone_id: str, name: str, rtype: str) -> RRset | None:
    return await session.get(RRset, (zone_id, name, rtype))


async def below(session: StoreSession, zone_id: str, name: str) -> list[tuple[str, str]]:
    """(name, type) of the rrsets strictly below `name`."""
    escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = await session.execute(select(RRset.name, RRset.type).where(
        RRset.zone_id == zone_id, RRset.name.like("%." + escaped, escape="\\")))
    return [(n, t) for n, t in rows.all()]


async def count_rrsets(session: StoreSession, zone_id: str) -> int:
    return int(await session.scalar(select(func.count()).select_from(RRset).where(RRset.zone_id == zone_id)) or 0)


async def delete_rrsets(session: StoreSession, zone_id: str) -> None:
    await session.execute(delete(RRset).where(RRset.zone_id == zone_id).execution_options(synchronize_session=False))


async def record_synced(session: StoreSession, zone_id: str, generation: int) -> None:
    """The nameserver holds the zone as it was at `generation` (never moves backwards)."""
    await session.execute(update(Zone).where(Zone.id == zone_id, Zone.synced_generation < generation)
                          .values(synced_generation=generation).execution_options(synchronize_session=False))


async def mark_pending(session: StoreSession, zone_id: str, keys: list[tuple[str, str]], generation: int) -> None:
    """Record that these (name, type) changed at `generation` (one row per key, the latest wins):
    one upsert, both stores speak ON CONFLICT."""
    if not keys:
        return
    stmt = dialect_insert(session, PendingChange).values(
        [{"zone_id": zone_id, "name": n, "type": t, "generation": generation} for n, t in keys])
    await session.execute(stmt.on_conflict_do_update(index_elements=["zone_id", "name", "type"],
                                                     set_={"generation": stmt.excluded.generation}))


async def pending(session: StoreSession, zone_id: str) -> list[tuple[str, str, int]]:
    """(name, type, generation) of the zone's changes not yet sent."""
    rows = await session.execute(select(PendingChange.name, PendingChange.type, PendingChange.generation)
                                 .where(PendingChange.zone_id == zone_id))
    return [(n, t, g) for n, t, g in rows.all()]


async def clear_pending(session: StoreSession, zone_id: str, sent: list[tuple[str, str, int]]) -> None:
    """Forget the changes sent, unless the key changed again since (a newer generation)."""
    for name, rtype, generation in sent:
        await session.execute(delete(PendingChange).where(
            PendingChange.zone_id == zone_id, PendingChange.name == name, PendingChange.type == rtype,
            PendingChange.generation <= generation).execution_options(synchronize_session=False))


async def clear_all_pending(session: StoreSession, zone_id: str, generation: int) -> None:
    await session.execute(delete(PendingChange).where(
        PendingChange.zone_id == zone_id, PendingChange.generation <= generation)
        .execution_options(synchronize_session=False))


ContentRow = tuple[str, str, int, list[str]]


async def contents(session: StoreSession, zone_id: str, names: list[str] | None = None) -> list[ContentRow]:
    """(name, type, ttl, records) of the zone's rrsets (of `names` only, when given), as plain
    tuples: a 10,000-record zone reads in a fraction of the time ORM objects take."""
    stmt = select(RRset.name, RRset.type, RRset.ttl, RRset.records).where(RRset.zone_id == zone_id)
    if names is not None:
        stmt = stmt.where(RRset.name.in_(names))
    rows = await session.execute(stmt)
    return [(n, t, ttl, list(recs)) for n, t, ttl, recs in rows.all()]


async def zone_by_id(session: StoreSession, zone_id: str) -> Zone | None:
    return await session.get(Zone, zone_id)


async def zones_by_ids(session: StoreSession, zone_ids: list[str]) -> list[Zone]:
    if not zone_ids:
        return []
    return list((await session.scalars(select(Zone).where(Zone.id.in_(zone_ids)))).all())
