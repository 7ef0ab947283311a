"""Project links: the record a custom hostname gets in its org's own zone.

When a custom hostname is added inside a zone the same org holds here, and the name holds none of
the owner's records, svc creates a CNAME from it to the fallback origin, managed_by "project" (the
DNS routes refuse to change it: 409 managed_rrset). Removing the hostname removes that record
again, and only while it is still the project link. At a zone's apex a CNAME is impossible (the
SOA and NS live there), so nothing is created for an apex hostname: the owner points it at the
edge with A/AAAA records of their own.

Every change goes through changes.rrsets_changed (the zone's generation and its nameserver sync,
in the same transaction as the hostname's change)."""

from __future__ import annotations

from enum import StrEnum

from svc.domains.dns import queries, records
from svc.domains.dns.changes import MAX_RRSETS, rrsets_changed
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import ManagedBy, RRset, Zone
from svc.uow import UnitOfWork


class Linked(StrEnum):
    """What link() did."""

    created = "created"
    # Already there (a re-add, or a retried request).
    exists = "exists"
    # The host is the zone's apex: a CNAME cannot be there.
    apex = "apex"
    # The name already holds records (the owner's own, or delegated below an NS cut): left alone.
    occupied = "occupied"
    # The host is in no zone of the org.
    no_zone = "no_zone"


def absolute(host: str) -> str:
    return host.lower().rstrip(".") + "."


async def org_zone(session: StoreSession, org_id: str, host: str, *, lock: bool = False) -> Zone | None:
    """The zone of org `org_id` that holds `host` (the closest one), or None. Zones of different
    orgs never overlap (zone_taken), so the closest zone of any org decides."""
    zone = await queries.closest_zone(session, absolute(host), lock=lock)
    return zone if zone is not None and zone.org_id == org_id else None


async def link(uow: UnitOfWork, org_id: str, host: str, target: str) -> Linked:
    """Create the project link (CNAME `host` -> `target`) when `host` is in a zone of the org and
    the name is free. Call in the hostname's write transaction."""
    session = uow.session
    zone = await org_zone(session, org_id, host, lock=True)
    if zone is None:
        return Linked.no_zone
    owner = absolute(host)
    if owner == zone.name:
        return Linked.apex
    nearby = await queries.around(session, zone.id, zone.name, owner)
    existing = {r.type: r for r in nearby if r.name == owner}
    if existing:
        row = existing.get("CNAME")
        if row is not None and row.managed_by == ManagedBy.project:
            return Linked.exists
        return Linked.occupied
    if any(owner.endswith("." + r.name) for r in nearby if r.type == "NS"):
        return Linked.occupied  # below a delegation: another nameserver answers for it
    if await queries.count_rrsets(session, zone.id) >= MAX_RRSETS:
        return Linked.occupied
    data = records.rrset(zone.name, owner, "CNAME", records.DEFAULT_TTL, [absolute(target)])
    session.add(RRset(zone_id=zone.id, name=owner, type="CNAME", ttl=data.ttl, records=list(data.records),
                      managed_by=ManagedBy.project, updated_at=utcnow()))
    await rrsets_changed(uow, zone, [(owner, "CNAME")])
    await session.flush()
    return Linked.created


async def unlink(uow: UnitOfWork, org_id: str, host: str) -> bool:
    """Remove the project link of `host` if it is still one (True when something was removed)."""
    session = uow.session
    zone = await org_zone(session, org_id, host, lock=True)
    if zone is None:
        return False
    row = await queries.rrset(session, zone.id, absolute(host), "CNAME")
    if row is None or row.managed_by != ManagedBy.project:
        return False
    await session.delete(row)
    await rrsets_changed(uow, zone, [(row.name, "CNAME")])
    await session.flush()
    return True
