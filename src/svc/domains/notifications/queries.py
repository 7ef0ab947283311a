"""SQL for notifications."""

from __future__ import annotations

from sqlalchemy import select

from svc.kit.store_session import StoreSession
from svc.models import Membership, Notification, Role, User


async def latest(session: StoreSession, org_id: str, limit: int, *, project: str | None = None) -> list[Notification]:
    """Newest first; only those about `project` when given."""
    stmt = select(Notification).where(Notification.org_id == org_id)
    if project is not None:
        stmt = stmt.where(Notification.project == project)
    rows = await session.scalars(stmt.order_by(Notification.created_at.desc(), Notification.id.desc()).limit(limit))
    return list(rows.all())


async def admin_addresses(session: StoreSession, org_id: str) -> list[str]:
    rows = await session.scalars(
        select(User.email).join(Membership, Membership.user_id == User.id)
        .where(Membership.org_id == org_id, Membership.role == Role.admin, User.email.is_not(None))
        .order_by(User.email))
    return [email for email in rows.all() if email]
