from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select

from svc.kit.store_session import StoreSession
from svc.models import LogLine


async def lines(session: StoreSession, project_id: str, *, after: int | None, since: datetime | None,
                limit: int) -> list[LogLine]:
    """A project's lines in the order they were stored: those after `after` (a seq), or the last
    `limit` since `since` (oldest first)."""
    stmt = select(LogLine).where(LogLine.project_id == project_id)
    if since is not None:
        stmt = stmt.where(LogLine.at >= since)
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
