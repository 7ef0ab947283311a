"""SQL for the audit trail."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, or_, select

from svc.kit.store_session import StoreSession
from svc.models import AuditEvent


async def page(session: StoreSession, org_id: str, *, limit: int, before: tuple[datetime, str] | None,
               action: str | None, actor: str | None) -> list[AuditEvent]:
    """The org's events, newest first (instant, then id); older than `before` when given. `action`
    ending in "." is a prefix of whole segments; otherwise it is the exact name."""
    stmt = select(AuditEvent).where(AuditEvent.org_id == org_id)
    if action is not None:
        stmt = stmt.where(AuditEvent.action.startswith(action, autoescape=True) if action.endswith(".")
                          else AuditEvent.action == action)
    if actor is not None:
        stmt = stmt.where(AuditEvent.actor_subject == actor)
    if before is not None:
        at, event_id = before
        stmt = stmt.where(or_(AuditEvent.at < at, and_(AuditEvent.at == at, AuditEvent.id < event_id)))
    stmt = stmt.order_by(AuditEvent.at.desc(), AuditEvent.id.desc()).limit(limit)
    return list((await session.scalars(stmt)).all())


async def actions(session: StoreSession, org_id: str) -> list[str]:
    """The event names recorded for the org, in order."""
    rows = await session.scalars(select(AuditEvent.action).where(AuditEvent.org_id == org_id)
                                 .distinct().order_by(AuditEvent.action))
    return list(rows.all())
