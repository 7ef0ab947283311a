from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Notification


def notify(session: AsyncSession, *, org_id: str, kind: str, message: str, project: str | None = None,
           data: dict[str, Any] | None = None) -> Notification:
    """Record a notification in the caller's transaction."""
    row = Notification(id=new_id("ntf"), org_id=org_id, kind=kind, message=message[:1000], project=project,
                       data=data or {}, created_at=utcnow(), sent_at=None)
    session.add(row)
    return row


async def latest(session: AsyncSession, org_id: str, limit: int) -> list[Notification]:
    rows = await session.scalars(
        select(Notification).where(Notification.org_id == org_id)
        .order_by(Notification.created_at.desc(), Notification.id.desc()).limit(limit))
    return list(rows.all())


async def latest_for_project(session: AsyncSession, org_id: str, project: str, limit: int) -> list[Notification]:
    rows = await session.scalars(
        select(Notification).where(Notification.org_id == org_id, Notification.project == project)
        .order_by(Notification.created_at.desc(), Notification.id.desc()).limit(limit))
    return list(rows.all())
