"""SQL of the mail outbox: due rows, the per-row lease, and the outcome of one attempt."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import CursorResult, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from svc.db import is_postgres
from svc.models import Invite, Notification, OutboundMail

_UNFINISHED = (OutboundMail.sent_at.is_(None), OutboundMail.failed_at.is_(None))


@dataclass(frozen=True)
class ClaimedMail:
    """A row this process holds the lease on: everything needed to send it, read in the claim."""

    id: str
    to_addr: str
    subject: str
    body: str
    attempts: int
    created_at: datetime


async def due_ids(session: AsyncSession, now: datetime, limit: int) -> list[str]:
    rows = await session.scalars(
        select(OutboundMail.id).where(*_UNFINISHED, OutboundMail.next_attempt_at <= now)
        .order_by(OutboundMail.next_attempt_at, OutboundMail.id).limit(limit))
    return list(rows.all())


async def claim(session: AsyncSession, mail_id: str, now: datetime, lease_until: datetime) -> ClaimedMail | None:
    """One conditional UPDATE moves the row's next attempt to the end of a lease, so of several
    processes exactly one sends it now; a process that dies mid-send leaves it due again later.
    The attempt is counted here, so a message that crashes its sender still runs out of tries."""
    result = await session.execute(
        update(OutboundMail)
        .where(OutboundMail.id == mail_id, *_UNFINISHED, OutboundMail.next_attempt_at <= now)
        .values(next_attempt_at=lease_until, attempts=OutboundMail.attempts + 1)
        .execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    if result.rowcount != 1:
        return None
    row = (await session.execute(
        select(OutboundMail.id, OutboundMail.to_addr, OutboundMail.subject, OutboundMail.body,
               OutboundMail.attempts, OutboundMail.created_at)
        .where(OutboundMail.id == mail_id))).one()
    return ClaimedMail(id=row.id, to_addr=row.to_addr, subject=row.subject, body=row.body,
                       attempts=row.attempts, created_at=row.created_at)


# A finished message's body is not kept: an invite's carries a usable one-time link, which must not
# sit in the database (or its backups) for the invite's seven days. The row, its address, subject
# and outcome stay as the record.
DELIVERED_BODY = "[delivered; the body is not kept]"
UNDELIVERABLE_BODY = "[not delivered; the body is not kept]"


async def mark_sent(session: AsyncSession, mail_id: str, now: datetime) -> bool:
    """Record the server's acceptance, and on the invite or notification the mail was for.
    False when the row is gone (the invite was revoked or re-sent meanwhile): nothing is marked.
    Locks the invite before the mail row, the order revoke and re-invite use, so no deadlock."""
    owner = (await session.execute(
        select(OutboundMail.invite_id).where(OutboundMail.id == mail_id))).first()
    if owner is None:
        return False
    if owner.invite_id is not None and is_postgres(session):
        await session.execute(select(Invite.id).where(Invite.id == owner.invite_id).with_for_update())
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


async def mark_retry(session: AsyncSession, mail_id: str, at: datetime, error: str) -> None:
    await session.execute(
        update(OutboundMail).where(OutboundMail.id == mail_id, *_UNFINISHED)
        .values(next_attempt_at=at, last_error=error[:1000]).execution_options(synchronize_session=False))


async def mark_failed(session: AsyncSession, mail_id: str, now: datetime, error: str) -> None:
    await session.execute(
        update(OutboundMail).where(OutboundMail.id == mail_id, *_UNFINISHED)
        .values(failed_at=now, last_error=error[:1000], body=UNDELIVERABLE_BODY)
        .execution_options(synchronize_session=False))
