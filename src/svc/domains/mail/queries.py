"""SQL of outgoing mail: the message to send, and the outcome once known."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import CursorResult, select, update

from svc.db import lock_rows
from svc.kit.store_session import StoreSession
from svc.models import Invite, Notification, OutboundMail

_UNFINISHED = (OutboundMail.sent_at.is_(None), OutboundMail.failed_at.is_(None))


@dataclass(frozen=True)
class QueuedMail:
    """Everything needed to send a message, read before the mail server is called."""

    id: str
    to_addr: str
    subject: str
    body: str
    created_at: datetime


async def unsent(session: StoreSession, mail_id: str) -> QueuedMail | None:
    """The message while it is still to be sent; None once sent, given up or withdrawn."""
    row = (await session.execute(
        select(OutboundMail.id, OutboundMail.to_addr, OutboundMail.subject, OutboundMail.body,
               OutboundMail.created_at)
        .where(OutboundMail.id == mail_id, *_UNFINISHED))).first()
    if row is None:
        return None
    return QueuedMail(id=row.id, to_addr=row.to_addr, subject=row.subject, body=row.body, created_at=row.created_at)


# A finished message's body is not kept: an invite's carries a usable one-time link, which must not
# sit in the database (or its backups) for the invite's seven days. The row, its address, subject
# and outcome stay as the record.
DELIVERED_BODY = "[delivered; the body is not kept]"
UNDELIVERABLE_BODY = "[not delivered; the body is not kept]"


async def mark_sent(session: StoreSession, mail_id: str, now: datetime) -> bool:
    """Record the server's acceptance, and on the invite or notification the mail was for.
    False when the row is gone (the invite was revoked or re-sent meanwhile): nothing is marked.
    Locks the invite before the mail row, the order revoke and re-invite use, so no deadlock."""
    owner = (await session.execute(
        select(OutboundMail.invite_id).where(OutboundMail.id == mail_id))).first()
    if owner is None:
        return False
    if owner.invite_id is not None:
        await lock_rows(session, select(Invite.id).where(Invite.id == owner.invite_id))
    result = await session.execute(
        update(OutboundMail).where(OutboundMail.id == mail_id, OutboundMail.sent_at.is_(None))
        .values(sent_at=now, failed_at=None, last_error=None, body=DELIVERED_BODY)
        .execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    if result.rowcount != 1:
        return False
    row = (await session.execute(
        select(OutboundMail.invite_id, OutboundMail.notification_id).where(OutboundMail.id == mail_id))).one()
    if row.invite_id is not None:
        await session.execute(update(Invite).where(Invite.id == row.invite_id).values(sent_at=now)
                              .execution_options(synchronize_session=False))
    if row.notification_id is not None:
        await session.execute(update(Notification).where(Notification.id == row.notification_id)
                              .values(sent_at=now).execution_options(synchronize_session=False))
    return True


async def mark_failed(session: StoreSession, mail_id: str, now: datetime, error: str) -> None:
    await session.execute(
        update(OutboundMail).where(OutboundMail.id == mail_id, *_UNFINISHED)
        .values(failed_at=now, last_error=error[:1000], body=UNDELIVERABLE_BODY)
        .execution_options(synchronize_session=False))
