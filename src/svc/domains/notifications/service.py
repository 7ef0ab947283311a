from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from svc.domains.mail.service import queue_mail
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Membership, Notification, Org, User
from svc.settings import Settings
from svc.uow import UnitOfWork


def notify(session: AsyncSession, *, org_id: str, kind: str, message: str, project: str | None = None,
           data: dict[str, Any] | None = None) -> Notification:
    """Record a notification in the caller's transaction."""
    row = Notification(id=new_id("ntf"), org_id=org_id, kind=kind, message=message[:1000], project=project,
                       data=data or {}, created_at=utcnow(), sent_at=None)
    session.add(row)
    return row


async def latest(uow: UnitOfWork, org_id: str, limit: int) -> list[Notification]:
    session = uow.session
    rows = await session.scalars(
        select(Notification).where(Notification.org_id == org_id)
        .order_by(Notification.created_at.desc(), Notification.id.desc()).limit(limit))
    return list(rows.all())


async def latest_for_project(session: AsyncSession, org_id: str, project: str, limit: int) -> list[Notification]:
    rows = await session.scalars(
        select(Notification).where(Notification.org_id == org_id, Notification.project == project)
        .order_by(Notification.created_at.desc(), Notification.id.desc()).limit(limit))
    return list(rows.all())


async def limit_reached(uow: UnitOfWork, org: Org, *, resource: str, limit: int, plan: str,
                        settings: Settings) -> Notification:
    """An org has used all of a plan limit (spec: notifications record limit events). Recorded in
    the caller's transaction, with one mail to each admin who has an address; the notification's
    sentAt is set when the first of them has gone out."""
    session = uow.session
    message = (f"{org.name} ({org.slug}) has used all {limit} {resource} of the {plan} plan. "
               f"Delete one, or move to a plan with more, to create another.")
    row = notify(session, org_id=org.id, kind=f"limit.{resource}", message=message,
                 data={"resource": resource, "limit": limit, "plan": plan})
    await session.flush()
    subject = f"{org.name}: {resource} limit reached on {settings.service_name}"
    body = f"{message}\n\nThis message went to the admins of {org.slug}.\n"
    for address in await _admin_addresses(session, org.id):
        queue_mail(uow, address, subject, body, notification_id=row.id)
    return row


async def _admin_addresses(session: AsyncSession, org_id: str) -> list[str]:
    rows = await session.scalars(
        select(User.email).join(Membership, Membership.user_id == User.id)
        .where(Membership.org_id == org_id, Membership.role == "admin", User.email.is_not(None))
        .order_by(User.email))
    return [email for email in rows.all() if email]
