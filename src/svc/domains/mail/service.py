"""Queue outgoing mail in the caller's unit of work: the message row and its `mail.send` job are
written in the same transaction, so a queued message exists exactly when the change that needs it
commits; the job (jobs.py) delivers it, and the thing it reports on (an invite's or a
notification's sentAt) is set only once the mail server accepted the message.
"""

from __future__ import annotations

import re

from sqlalchemy import CursorResult, delete

from svc.domains.mail.kinds import MailJob
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import OutboundMail
from svc.uow import UnitOfWork

MAX_ADDRESS = 320
MAX_SUBJECT = 400
# Attempts before a temporarily failing message is given up: with the queue's backoff (svc/jobs/
# queries.py: 2 s doubling, at most an hour apart) about three hours of retries.
MAX_ATTEMPTS = 14

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def one_line(text: str, limit: int) -> str:
    """Header-safe text: control characters (CR, LF, tabs) become one space; cut at `limit`."""
    return " ".join(_CONTROL.sub(" ", text).split())[:limit]


def queue_mail(uow: UnitOfWork, to: str, subject: str, body: str, invite_id: str | None = None,
               notification_id: str | None = None) -> OutboundMail:
    """Add one message and its delivery job to the unit of work (nothing is sent here).

    `to` is one bare address that the caller has validated; `subject` is made header-safe.
    Pass `invite_id` or `notification_id` so a successful send also sets that row's sentAt."""
    address = to.strip()
    if not address or len(address) > MAX_ADDRESS or _CONTROL.search(address) or "," in address:
        raise ValueError("queue_mail needs one bare email address")
    row = OutboundMail(id=new_id("mail"), to_addr=address, subject=one_line(subject, MAX_SUBJECT), body=body,
                       invite_id=invite_id, notification_id=notification_id, created_at=utcnow())
    uow.session.add(row)
    uow.enqueue(MailJob.send, {"mail_id": row.id}, max_attempts=MAX_ATTEMPTS)
    return row


async def discard_unsent(uow: UnitOfWork, *, invite_id: str) -> int:
    """Drop an invite's mail that has not gone out (queued, retrying or refused); returns how many.

    Its job then finds no row and sends nothing; a send already in flight finds no row when it
    records its outcome, and sets no sentAt."""
    result = await uow.session.execute(
        delete(OutboundMail).where(OutboundMail.invite_id == invite_id, OutboundMail.sent_at.is_(None))
        .execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    return int(result.rowcount)
