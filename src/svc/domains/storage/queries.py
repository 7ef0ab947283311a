"""Object storage's SQL: the grants and the reservations of writes in flight (svc.models.storage)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, delete, exists, func, insert, select, update

from svc.kit.store_session import StoreSession
from svc.models import Org, Project, ProjectState, StorageGrant, StorageReservation


async def grant(session: StoreSession, project_id: str, *, lock: bool = False) -> StorageGrant | None:
    """The project's grant row, revoked or not; `lock`: held until the transaction ends (FOR UPDATE
    on PostgreSQL; SQLite's writers are serial): every reservation of the project takes its turn."""
    found = select(StorageGrant).where(StorageGrant.project_id == project_id)
    return (await session.scalars(found.with_for_update() if lock else found)).first()


async def reserved(session: StoreSession, project_id: str) -> int:
    """The bytes the project's writes in flight hold."""
    held = await session.scalar(select(func.coalesce(func.sum(StorageReservation.bytes), 0))
                                .where(StorageReservation.project_id == project_id))
    return int(held or 0)


@dataclass(frozen=True)
class Room:
    """What a write's reservation is decided on, but the writes in flight (reserved(), read once
    the row is held: PostgreSQL's snapshot of a statement that waited for the lock is older than
    the reservation its holder committed)."""

    prefix: str
    revoked: bool
    plan: str
    state: str
    used: int  # usedBytes


async def room(session: StoreSession, project_id: str) -> Room | None:
    """The project's grant, its org's plan and its state, in one query, the grant row held as
    grant(lock=True) holds it; None without a grant or a project."""
    found = (select(StorageGrant.prefix, StorageGrant.revoked_at, Org.plan, Project.state, StorageGrant.used_bytes)
             .join(Project, Project.id == StorageGrant.project_id).join(Org, Org.id == Project.org_id)
             .where(StorageGrant.project_id == project_id).with_for_update(of=StorageGrant))
    row = (await session.execute(found)).first()
    if row is None:
        return None
    return Room(prefix=str(row[0]), revoked=row[1] is not None, plan=str(row[2]), state=str(row[3]),
                used=int(row[4]))


async def reserve(session: StoreSession, *, reservation_id: str, project_id: str, size: int, now: datetime) -> None:
    await session.execute(insert(StorageReservation).values(id=reservation_id, project_id=project_id, bytes=size,
                                                            created_at=now))


async def settle(session: StoreSession, reservation_id: str, project_id: str, delta: int) -> bool:
    """A write's end: its reservation gone and usedBytes moved by `delta` (as add_used), in two
    statements; False (nothing counted) when the project is gone or going meanwhile."""
    await unreserve(session, reservation_id)
    used = StorageGrant.used_bytes + delta
    active = exists().where(Project.id == project_id, Project.state == ProjectState.active)
    result = await session.execute(update(StorageGrant).where(StorageGrant.project_id == project_id, active)
                                   .values(used_bytes=case((used < 0, 0), else_=used)))
    return bool(getattr(result, "rowcount", 0))


async def unreserve(session: StoreSession, reservation_id: str) -> None:
    await session.execute(delete(StorageReservation).where(StorageReservation.id == reservation_id))


async def add_used(session: StoreSession, project_id: str, delta: int) -> None:
    """svc's own write (delta > 0) or delete (< 0), counted at once; never below zero (a delete of
    an object written before the last count, counted twice, would)."""
    if delta == 0:
        return
    used = StorageGrant.used_bytes + delta
    await session.execute(update(StorageGrant).where(StorageGrant.project_id == project_id)
                          .values(used_bytes=case((used < 0, 0), else_=used)))


async def prefixes(session: StoreSession) -> list[tuple[str, str, int]]:
    """(project id, prefix, used bytes) of every grant row: revoked ones too, whose objects are kept."""
    rows = await session.execute(select(StorageGrant.project_id, StorageGrant.prefix, StorageGrant.used_bytes)
                                 .order_by(StorageGrant.project_id))
    return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]


async def report(session: StoreSession, project_id: str, counted: int, seen: int, now: datetime) -> None:
    """What the store holds under the prefix, as counted, plus what svc's own writes added while it
    was counted (used_bytes past `seen`, what it was before): a write the count missed is not
    forgotten until the next count; one it saw is counted twice until then (over, never under)."""
    since = StorageGrant.used_bytes - seen
    await session.execute(update(StorageGrant).where(StorageGrant.project_id == project_id)
                          .values(used_bytes=counted + case((since > 0, since), else_=0), reported_at=now))


async def release_before(session: StoreSession, before: datetime) -> int:
    """Reservations made before `before`: their writes ended long ago, in a process that is gone."""
    result = await session.execute(delete(StorageReservation).where(StorageReservation.created_at < before))
    return int(getattr(result, "rowcount", 0) or 0)
