from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, or_, select

from svc.db import dialect_insert
from svc.kit.store_session import StoreSession
from svc.models import Deployment, LogLine, Project, ProjectState, TrafficMinute


async def lines(session: StoreSession, project_id: str, *, after: int | None, since: datetime | None,
                limit: int, request: str | None = None) -> list[LogLine]:
    """A project's lines in the order they were stored: those after `after` (a seq), or the last
    `limit` since `since` (oldest first); only one request's when `request` is given: its whole id,
    or the end that follows a dash in it (what kit/ids.py short_request_id shows)."""
    stmt = select(LogLine).where(LogLine.project_id == project_id)
    if since is not None:
        stmt = stmt.where(LogLine.at >= since)
    if request is not None:
        stmt = stmt.where(or_(LogLine.request_id == request,
                              LogLine.request_id.endswith("-" + request, autoescape=True)))
    if after is not None:
        rows = await session.scalars(stmt.where(LogLine.seq > after).order_by(LogLine.seq).limit(limit))
        return list(rows)
    rows = await session.scalars(stmt.order_by(LogLine.seq.desc()).limit(limit))
    return list(reversed(list(rows)))


async def last_seq(session: StoreSession, project_id: str) -> int:
    seq = await session.scalar(select(LogLine.seq).where(LogLine.project_id == project_id)
                               .order_by(LogLine.seq.desc()).limit(1))
    return int(seq or 0)


async def delete_older_than(session: StoreSession, cutoff: datetime) -> int:
    result = await session.execute(delete(LogLine).where(LogLine.at < cutoff)
                                   .execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)


async def existing_projects(session: StoreSession, project_ids: set[str]) -> set[str]:
    return set(await session.scalars(select(Project.id).where(Project.id.in_(project_ids))))


async def add_traffic(session: StoreSession, project_id: str, minute: datetime, counts: dict[str, int],
                      bytes_sent: int) -> None:
    """Add to a project's minute (one upsert: several svc processes add to the same row)."""
    values = {"s2xx": 0, "s3xx": 0, "s4xx": 0, "s5xx": 0} | counts
    insert = dialect_insert(session, TrafficMinute).values(project_id=project_id, minute=minute, bytes_sent=bytes_sent,
                                                           **values)
    await session.execute(insert.on_conflict_do_update(
        index_elements=[TrafficMinute.project_id, TrafficMinute.minute],
        set_={name: getattr(TrafficMinute, name) + getattr(insert.excluded, name)
              for name in ("s2xx", "s3xx", "s4xx", "s5xx", "bytes_sent")}))


async def traffic_since(session: StoreSession, project_id: str, since: datetime) -> list[TrafficMinute]:
    rows = await session.scalars(select(TrafficMinute).where(TrafficMinute.project_id == project_id,
                                                             TrafficMinute.minute >= since)
                                 .order_by(TrafficMinute.minute))
    return list(rows)


async def delete_traffic_before(session: StoreSession, cutoff: datetime) -> int:
    result = await session.execute(delete(TrafficMinute).where(TrafficMinute.minute < cutoff)
                                   .execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)


async def live_worker_keys(session: StoreSession, project_id: str | None = None) -> dict[str, str]:
    """Every active project whose live deployment has a worker (that one project's, when named):
    its id -> the worker's key (the same key the routing table gives the edge: `<deployment
    id>.<bindings generation>`)."""
    stmt = (select(Project.id, Deployment.id, Deployment.worker, Project.bindings_generation)
            .join(Deployment, Deployment.id == Project.live_deployment_id)
            .where(Project.state == ProjectState.active))
    if project_id is not None:
        stmt = stmt.where(Project.id == project_id)
    rows = await session.execute(stmt)
    return {project_id: f"{deployment_id}.{generation}"
            for project_id, deployment_id, worker, generation in rows.all() if worker}
