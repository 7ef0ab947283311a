"""The `mail.send` job: deliver one queued message through the mail adapter.

Read the message, give the store back, talk to the mail server with nothing of the store held,
then record the outcome in the job's write transaction (Tx.READ_THEN_WRITE), which also marks the
job done. A temporary refusal (4xx, a server that cannot be reached) raises: the job queue retries
with its backoff, and the last attempt records the message as not deliverable. A permanent refusal
(5xx) is recorded at once. Delivery is at least once: a process that dies between the server's
acceptance and the commit leaves the job to be taken over and the message sent again; its
Message-ID stays the same, so a receiver can drop the duplicate.

Never log a message's body (invite links carry a token) nor its address (contact data).
"""

from __future__ import annotations

import logging
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

from svc.adapters.mail.port import MailDeferred, MailRejected
from svc.adapters.mail.settings import MailSettings
from svc.domains.mail import queries
from svc.domains.mail.kinds import MailJob
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.settings import Config
from svc.uow import Tx, use_case

log = logging.getLogger("svc.mail")


def register(registry: JobRegistry, config: Config) -> None:
    registry.handler(MailJob.send, send)


def build_message(config: Config, mail: queries.QueuedMail) -> EmailMessage:
    """Raises ValueError for a message that can never be sent (a header the server cannot take)."""
    domain = parseaddr(config.settings_of(MailSettings).mail_from)[1].rpartition("@")[2] or "localhost"
    message = EmailMessage()
    message["From"] = config.settings_of(MailSettings).mail_from
    message["To"] = mail.to_addr
    message["Subject"] = mail.subject
    message["Date"] = format_datetime(mail.created_at)
    # Stable across retries, so a receiver can drop a duplicate of an at-least-once delivery.
    message["Message-ID"] = f"<{mail.id}@{domain}>"
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(mail.body)
    return message


@use_case(Tx.READ_THEN_WRITE)  # the SMTP exchange holds nothing of the store
async def send(run: JobRun) -> None:
    mail_id = str(run.payload["mail_id"])
    mail = await queries.unsent(run.session, mail_id)
    if mail is None:
        return  # withdrawn (the invite was revoked or re-sent), or already sent
    await run.uow.close_reads()
    try:
        message = build_message(run.ctx.config, mail)
    except ValueError:
        await _give_up(run, "the message has a header that cannot be sent")
        return
    try:
        await run.ctx.adapters.mail.send(message)
    except MailRejected as exc:
        await _give_up(run, _describe(exc))
        return
    except Exception as exc:  # MailDeferred, or a sender failing in a way it did not classify
        if not isinstance(exc, MailDeferred):
            log.warning("mail %s: unexpected %s from the mail sender", mail_id, type(exc).__name__)
        if run.last_attempt:
            await _give_up(run, f"gave up after {run.attempt} attempts: {_describe(exc)}")
            return
        log.info("mail %s deferred (attempt %d): %s", mail_id, run.attempt, _describe(exc))
        raise MailDeferred(_describe(exc)) from None
    recorded = await queries.mark_sent(await run.uow.begin_write(), mail_id, utcnow())
    log.info("mail %s sent (attempt %d)%s", mail_id, run.attempt,
             "" if recorded else "; its row was withdrawn meanwhile")


async def _give_up(run: JobRun, error: str) -> None:
    mail_id = str(run.payload["mail_id"])
    await queries.mark_failed(await run.uow.begin_write(), mail_id, utcnow(), error)
    log.warning("mail %s not deliverable (attempt %d): %s", mail_id, run.attempt, error)


def _describe(exc: Exception) -> str:
    """The adapters' messages name codes and causes, never addresses or content."""
    if isinstance(exc, (MailRejected, MailDeferred)):
        return str(exc) or type(exc).__name__
    return type(exc).__name__
