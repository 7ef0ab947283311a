"""SQL for custom hostnames (the rows are the projects area's `hostnames` table)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, select, update

from svc.kit.store_session import StoreSession
from svc.models import Hostname, HostnameKind, HostnameStatus, Project, ProjectState


async def of_project(session: StoreSession, project_id: str) -> list[Hostname]:
    """The project's hostnames: the default one first, then the custom ones by name."""
    first = case((Hostname.kind == HostnameKind.default, 0), else_=1)
    return list((await session.scalars(
        select(Hostname).where(Hostname.project_id == project_id).order_by(first, Hostname.host))).all())


async def by_host(session: StoreSession, host: str, *, lock: bool = False) -> Hostname | None:
    stmt = select(Hostname).where(Hostname.host == host)
    if lock:
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt)).first()


async def custom_hosts_of(session: StoreSession, project_id: str) -> list[str]:
    return list((await session.scalars(select(Hostname.host).where(
        Hostname.project_id == project_id, Hostname.kind == HostnameKind.custom).order_by(Hostname.host))).all())


@dataclass(frozen=True)
class Pending:
    """A pending custom hostname as the verification cycle needs it."""

    host: str
    org_id: str
    value: str
    project_id: str


async def pending(session: StoreSession, limit: int) -> list[Pending]:
    """Pending custom hostnames of active projects, the longest unchecked first (never checked
    before all)."""
    rows = await session.execute(
        select(Hostname.host, Project.org_id, Hostname.verification_value, Project.id)
        .join(Project, Project.id == Hostname.project_id)
        .where(Hostname.kind == HostnameKind.custom, Hostname.status == HostnameStatus.pending_dns,
               Project.state == ProjectState.active)
        .order_by(Hostname.checked_at.asc().nulls_first(), Hostname.created_at, Hostname.host)
        .limit(limit))
    return [Pending(host=h, org_id=o, value=v or "", project_id=p) for h, o, v, p in rows.all()]


async def holder_org(session: StoreSession, host: str) -> str | None:
    """The org of the project holding `host`, if any."""
    return await session.scalar(
        select(Project.org_id).join(Hostname, Hostname.project_id == Project.id).where(Hostname.host == host))


async def project_name(session: StoreSession, project_id: str) -> str | None:
    return await session.scalar(select(Project.name).where(Project.id == project_id))


async def pending_one(session: StoreSession, host: str) -> Pending | None:
    row = (await session.execute(
        select(Hostname.host, Project.org_id, Hostname.verification_value, Project.id)
        .join(Project, Project.id == Hostname.project_id)
        .where(Hostname.host == host, Hostname.kind == HostnameKind.custom,
               Hostname.status == HostnameStatus.pending_dns, Project.state == ProjectState.active))).first()
    return Pending(host=row[0], org_id=row[1], value=row[2] or "", project_id=row[3]) if row else None


async def record_check(session: StoreSession, host: str, value: str, *, proven_by: str | None, error: str | None,
                       at: datetime) -> bool:
    """Write a check's outcome to a row that is still the one checked (pending, same token: not
    removed and added again meanwhile). True when the row turned active."""
    proven = proven_by is not None
    values: dict[str, object] = {"checked_at": at, "last_error": None if proven else error}
    if proven:
        values["status"] = HostnameStatus.active
        values["proven_by"] = proven_by
    result = await session.execute(
        update(Hostname).where(Hostname.host == host, Hostname.verification_value == value,
                               Hostname.status == HostnameStatus.pending_dns)
        .values(**values).execution_options(synchronize_session=False))
    return proven and bool(getattr(result, "rowcount", 0))

