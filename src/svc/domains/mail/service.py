"""Queue outgoing mail in the caller's transaction; the send cycle (jobs.py) delivers it.

A queued row exists exactly when the change that needs it commits, and the thing it reports on
(an invite's or a notification's sentAt) is set only once the mail server accepted the message.
"""

from __future__ import annotations

import re

from sqlalchemy import CursorResult, delete
from sqlalchemy.ext.asyncio import AsyncSession

from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import OutboundMail

MAX_ADDRESS = 320
MAX_SUBJECT = 400

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def one_line(text: str, limit: int) -> str:
    """Header-safe text: control characters (CR, LF, tabs) become one space; cut at `limit`."""
    return " ".join(_CONTROL.sub(" ", text).split())[:limit]


def queue_mail(session: AsyncSession, to: str, subject: str, body: str, invite_id: str | None = None,
               notification_id: str | None = None) -> OutboundMail:
    """Add one message to the caller's transaction (not awaited: nothing is sent here).

    `to` is one bare address that the caller has validated; `subject` is made header-safe.
    Pass `invite_id` or `notification_id` so a successful send also sets that row's sentAt."""
    address = to.strip()
    if not address or len(address) > MAX_ADDRESS or _CONTROL.search(address) or "," in address:
        raise ValueError("queue_mail needs one bare email address")
    now = utcnow()
    row = OutboundMail(id=new_id("mail"), to_addr=address, subject=one_line(subject, MAX_SUBJECT), body=body,
                       invite_id=invite_id, notification_id=notification_id, created_at=now,
                       next_attempt_at=now, attempts=0)
    session.add(row)
    return row


async def discard_unsent(session: AsyncSession, *, invite_id: str) -> int:
    """Drop an invite's mail that has not gone out (queued, retrying or refused); returns how many.

    A send already in flight then finds no row when it finishes and sets no sentAt."""
    result = await session.execute(
        delete(OutboundMail).where(OutboundMail.invite_id == invite_id, OutboundMail.sent_at.is_(None))
        .execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    return int(result.rowcount)
