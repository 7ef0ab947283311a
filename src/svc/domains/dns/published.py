"""Records another area of svc publishes for svc's own names (the mail domain's MX, SPF, DKIM and
DMARC: domains/email/records.py), in the zone of the store that holds the name, whichever org
holds that zone: svc serves it, so svc answers for its own names there. The rows are managed (the
DNS routes refuse to change them: 409 managed_rrset); a name and type holding records of the zone's
owner is left alone. Every change goes through changes.rrsets_changed (the zone's next sync)."""

from __future__ import annotations

from dataclasses import dataclass

from svc.domains.dns import queries, records
from svc.domains.dns.changes import rrsets_changed
from svc.domains.dns.links import absolute
from svc.kit.clock import utcnow
from svc.models import RRset, Zone
from svc.uow import UnitOfWork

_TTL = records.DEFAULT_TTL


@dataclass(frozen=True)
class Wanted:
    name: str  # absolute or not; lower case
    type: str
    records: tuple[str, ...]  # zone-file text (a TXT as one unquoted string)
    ttl: int = _TTL


async def publish(uow: UnitOfWork, domain: str, wanted: list[Wanted], managed_by: str) -> set[tuple[str, str]]:
    """`wanted` in the closest zone holding `domain` (none: nothing, the records are for people to
    copy); the (absolute name, type) that are in place after it."""
    session = uow.session
    zone = await queries.closest_zone(session, absolute(domain), lock=True)
    if zone is None:
        return set()
    placed: set[tuple[str, str]] = set()
    changed: list[tuple[str, str]] = []
    now = utcnow()
    for want in wanted:
        owner = absolute(want.name)
        if not records.is_within(owner, zone.name):
            continue
        data = records.rrset(zone.name, owner, want.type, want.ttl, list(want.records))
        row = await queries.rrset(session, zone.id, owner, want.type)
        if row is not None and row.managed_by != managed_by:
            continue  # the zone owner's own records, or svc's of another kind
        if row is None:
            session.add(RRset(zone_id=zone.id, name=owner, type=want.type, ttl=data.ttl, records=list(data.records),
                              managed_by=managed_by, updated_at=now))
            changed.append((owner, want.type))
        elif (row.ttl, list(row.records)) != (data.ttl, list(data.records)):
            row.ttl, row.records, row.updated_at = data.ttl, list(data.records), now
            changed.append((owner, want.type))
        placed.add((owner, want.type))
    if changed:
        await rrsets_changed(uow, zone, changed)
        await session.flush()
    return placed


async def in_place(uow: UnitOfWork, domain: str, wanted: list[Wanted], managed_by: str) -> Zone | None:
    """The zone holding `domain` when every one of `wanted` is in it as wanted, managed by `managed_by`."""
    session = uow.session
    zone = await queries.closest_zone(session, absolute(domain))
    if zone is None:
        return None
    for want in wanted:
        owner = absolute(want.name)
        row = await queries.rrset(session, zone.id, owner, want.type)
        if row is None or row.managed_by != managed_by:
            return None
        data = records.rrset(zone.name, owner, want.type, want.ttl, list(want.records))
        if list(row.records) != list(data.records):
            return None
    return zone
