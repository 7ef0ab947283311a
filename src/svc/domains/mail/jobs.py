"""The mail send cycle: every SVC_MAIL_INTERVAL_SECONDS, deliver due rows of the outbox.

Each row goes through three short transactions, so a slow or unreachable mail server never holds
the state store: claim (a conditional UPDATE that leases the row to this process), send (no
transaction open), record the outcome. The job's own transaction (JobRun.session) is not used;
the outcome of every message commits as soon as it is known, so a crash mid-batch loses nothing
already sent. Delivery is at least once: a process that dies between the server's acceptance and
the outcome's commit leaves the row to be sent again when its lease runs out.

Never log a message's body (invite links carry a token) nor its address (contact data).
"""

from __future__ import annotations

import logging
import random
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

from svc.adapters.mail.port import MailDeferred, MailRejected
from svc.context import AppContext
from svc.domains.mail import queries
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.settings import Settings

log = logging.getLogger("svc.mail")

CYCLE = "mail.send"
BATCH = 20
# Longer than one SMTP exchange can take (the sender's timeout applies per socket operation).
LEASE = timedelta(minutes=5)
# Attempts before a temporarily failing message is given up: about six hours of retries.
MAX_ATTEMPTS = 12


def register(registry: JobRegistry, settings: Settings) -> None:
    registry.cycle(CYCLE, settings.mail_interval_seconds, _cycle)


async def _cycle(run: JobRun) -> None:
    await send_due(run.ctx)


def retry_delay(attempts: int) -> timedelta:
    """After the n-th failed attempt: about 1, 2, 4 ... minutes, at most an hour, with jitter."""
    base = min(3600.0, 60.0 * 2.0 ** max(0, attempts - 1))
    return timedelta(seconds=base * random.uniform(0.8, 1.2))


async def send_due(ctx: AppContext, *, limit: int = BATCH) -> int:
    """Send up to `limit` due messages; returns how many the server accepted."""
    async with ctx.db.transaction(write=False) as s:
        ids = await queries.due_ids(s, utcnow(), limit)
    sent = 0
    for mail_id in ids:
        if await _send_one(ctx, mail_id):
            sent += 1
    return sent


def build_message(settings: Settings, mail: queries.ClaimedMail) -> EmailMessage:
    """Raises ValueError for a message that can never be sent (a header the server cannot take)."""
    domain = parseaddr(settings.mail_from)[1].rpartition("@")[2] or "localhost"
    message = EmailMessage()
    message["From"] = settings.mail_from
    message["To"] = mail.to_addr
    message["Subject"] = mail.subject
    message["Date"] = format_datetime(mail.created_at)
    # Stable across retries, so a receiver can drop a duplicate of an at-least-once delivery.
    message["Message-ID"] = f"<{mail.id}@{domain}>"
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(mail.body)
    return message


async def _send_one(ctx: AppContext, mail_id: str) -> bool:
    now = utcnow()
    async with ctx.db.transaction() as s:
        mail = await queries.claim(s, mail_id, now, now + LEASE)
    if mail is None:
        return False  # another process has it, or it was sent, revoked or re-sent meanwhile
    try:
        message = build_message(ctx.settings, mail)
    except ValueError:
        await _give_up(ctx, mail, "the message has a header that cannot be sent")
        return False
    try:
        await ctx.adapters.mail.send(message)
    except MailRejected as exc:
        await _give_up(ctx, mail, _describe(exc))
        return False
    except Exception as exc:  # MailDeferred, or a sender failing in a way it did not classify
        if not isinstance(exc, MailDeferred):
            log.warning("mail %s: unexpected %s from the mail sender", mail.id, type(exc).__name__)
        if mail.attempts >= MAX_ATTEMPTS:
            await _give_up(ctx, mail, f"gave up after {mail.attempts} attempts: {_describe(exc)}")
            return False
        retry_at = utcnow() + retry_delay(mail.attempts)
        async with ctx.db.transaction() as s:
            await queries.mark_retry(s, mail.id, retry_at, _describe(exc))
        log.info("mail %s deferred (attempt %d): %s", mail.id, mail.attempts, _describe(exc))
        return False
    async with ctx.db.transaction() as s:
        recorded = await queries.mark_sent(s, mail.id, utcnow())
    log.info("mail %s sent (attempt %d)%s", mail.id, mail.attempts,
             "" if recorded else "; its row was withdrawn meanwhile")
    return recorded


async def _give_up(ctx: AppContext, mail: queries.ClaimedMail, error: str) -> None:
    async with ctx.db.transaction() as s:
        await queries.mark_failed(s, mail.id, utcnow(), error)
    log.warning("mail %s not deliverable (attempt %d): %s", mail.id, mail.attempts, error)


def _describe(exc: Exception) -> str:
    """The adapters' messages name codes and causes, never addresses or content."""
    if isinstance(exc, (MailRejected, MailDeferred)):
        return str(exc) or type(exc).__name__
    return type(exc).__name__
