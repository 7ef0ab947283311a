"""Per-org notifications (limit, backup and restore events, certificates not renewing): recorded in
the caller's unit of work, with mail to the org's admins where the event warrants it; and mail to
svc's operators about svc itself (operators_mailed)."""

from __future__ import annotations

from typing import Any

from svc.domains.mail.service import queue_mail
from svc.domains.notifications import queries
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import Notification, Org
from svc.settings import Settings
from svc.uow import UnitOfWork


def notify(session: StoreSession, *, org_id: str, kind: str, message: str, project: str | None = None,
           data: dict[str, Any] | None = None) -> Notification:
    """Record a notification in the caller's transaction."""
    row = Notification(id=new_id("ntf"), org_id=org_id, kind=kind, message=message[:1000], project=project,
                       data=data or {}, created_at=utcnow(), sent_at=None)
    session.add(row)
    return row


async def latest(uow: UnitOfWork, org_id: str, limit: int, *, project: str | None = None) -> list[Notification]:
    """Newest first; only those about `project` when given."""
    return await queries.latest(uow.session, org_id, limit, project=project)


async def mailed(uow: UnitOfWork, org: Org, *, kind: str, message: str, subject: str, settings: Settings,
                 project: str | None = None, data: dict[str, Any] | None = None) -> Notification:
    """A notification recorded in the caller's transaction, with one mail to each admin who has an
    address (the send cycle sends it; the notification's sentAt is set when the first has gone)."""
    session = uow.session
    row = notify(session, org_id=org.id, kind=kind, message=message, project=project, data=data)
    await session.flush()
    body = f"{message}\n\nThis message went to the admins of {org.slug}.\n"
    for address in await queries.admin_addresses(session, org.id):
        queue_mail(uow, address, f"{org.name}: {subject} on {settings.service_name}", body, notification_id=row.id)
    return row


async def limit_reached(uow: UnitOfWork, org: Org, *, resource: str, limit: int, plan: str,
                        settings: Settings) -> Notification:
    """An org has used all of a plan limit (spec: notifications record limit events)."""
    message = (f"{org.name} ({org.slug}) has used all {limit} {resource} of the {plan} plan. "
               f"Delete one, or move to a plan with more, to create another.")
    return await mailed(uow, org, kind=f"limit.{resource}", message=message, subject=f"{resource} limit reached",
                        settings=settings, data={"resource": resource, "limit": limit, "plan": plan})


async def claim_released(uow: UnitOfWork, org: Org, *, kind: str, message: str, settings: Settings) -> Notification:
    """An org lost a claim it never proved (a zone, a hostname) to an org that proved the name is theirs."""
    return await mailed(uow, org, kind=kind, message=message, subject="a name was taken over", settings=settings)


async def operators_mailed(uow: UnitOfWork, *, subject: str, message: str, settings: Settings) -> int:
    """A mail to each operator SVC_OPERATORS names by address (about svc itself, no org's);
    how many were queued."""
    addresses = sorted({name.strip().lower() for name in settings.operators.split(",") if "@" in name})
    body = f"{message}\n\nThis message went to the operators of {settings.service_name} (SVC_OPERATORS).\n"
    for address in addresses:
        queue_mail(uow, address, f"{settings.service_name}: {subject}", body)
    return len(addresses)
