"""Mail a project sends (env.email.send, POST .../email/send; docs/email.md "Outbound").

A send is checked (the grant, the recipients, the plan's hourly cap), its message built and
DKIM-signed, the signed bytes stored in the blob store, and the log row written with its
`email.send` job in one transaction: the row exists exactly when the message will go out. The job
(`deliver`) hands the stored bytes to the relay with nothing of the store held, and records what
the relay said. A recipient on the project's suppression list (a permanent bounce, a complaint) is
dropped; a message left with none is logged `suppressed` and never sent.

Never log a message's content nor its addresses: they are the project's users' data."""

from __future__ import annotations

import email.policy
import logging
import math
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.utils import format_datetime
from pathlib import Path

from email_validator import EmailNotValidError, validate_email

from svc.adapters.mail_relay.port import MailDeferred, MailRejected
from svc.context import AppContext
from svc.domains.email import dkim, errors, queries, schemas
from svc.domains.email.kinds import EmailJob
from svc.domains.email.service import SENDER_LOCAL_PART, mail_domain, raw_key
from svc.domains.orgs import service as orgs
from svc.errors import BadRequest
from svc.jobs.registry import JobRun
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import EmailGrant, MailDirection, MailLogEntry, MailOutcome, Org, Project
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.email")

MAX_RECIPIENTS = 50
# A message's bytes at most (a raw one re-sent, or one built): what common relays take (SES: 10 MB).
MAX_RAW_BYTES = 10 * 1024 * 1024
MAX_SUBJECT = 400
# Attempts before a message the relay keeps deferring is failed: with the queue's backoff (2 s
# doubling, at most an hour apart) about three hours, as svc's own mail (domains/mail).
MAX_ATTEMPTS = 14
_HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Outgoing:
    to: list[str]  # 1..50 addresses
    subject: str
    text: str | None = None
    html: str | None = None
    from_local: str | None = None  # the local part at the project's address; None: "noreply"
    reply_to: str | None = None


@use_case(Tx.WRITE)
async def send(uow: UnitOfWork, project: Project, outgoing: Outgoing) -> MailLogEntry:
    """A message built from its parts, From `<local>@<address>`, Message-ID `<mail id@address>`."""
    rcpts = _recipients(outgoing.to, "to")
    local = _local_part(outgoing.from_local)
    reply_to = _recipients([outgoing.reply_to], "replyTo")[0] if outgoing.reply_to else None
    if "\r" in outgoing.subject or "\n" in outgoing.subject or len(outgoing.subject) > MAX_SUBJECT:
        raise BadRequest.of_field("subject", f"must be one line of at most {MAX_SUBJECT} characters")
    if outgoing.text is None and outgoing.html is None:
        raise BadRequest.of_field("text", "or html must be given")
    grant = await _grant(uow, project)
    mail_id = new_id("mail")
    now = utcnow()
    message = EmailMessage()
    message["From"] = f"{local}@{grant.address}"
    message["To"] = ", ".join(rcpts)
    if reply_to:
        message["Reply-To"] = reply_to
    message["Subject"] = outgoing.subject
    message["Date"] = format_datetime(now)
    message["Message-ID"] = f"<{mail_id}@{grant.address}>"
    if outgoing.text is not None:
        message.set_content(outgoing.text)
        if outgoing.html is not None:
            message.add_alternative(outgoing.html, subtype="html")
    else:
        message.set_content(outgoing.html or "", subtype="html")
    raw = message.as_bytes(policy=email.policy.SMTP)
    if len(raw) > MAX_RAW_BYTES:
        raise BadRequest.of_field("text", f"makes a message over {MAX_RAW_BYTES} bytes")
    return await _queue(uow, project, grant, mail_id=mail_id, now=now, sender=f"{local}@{grant.address}",
                        rcpts=rcpts, raw=raw, subject=outgoing.subject, message_id=f"{mail_id}@{grant.address}")


@use_case(Tx.WRITE)
async def send_raw(uow: UnitOfWork, project: Project, *, rcpts: list[str], raw: bytes,
                   from_local: str | None = None) -> MailLogEntry:
    """A whole message re-sent as it is (a worker's forward() or reply() of a received one), signed
    by svc; the envelope's sender is `<from_local>@<address>`. A message without a Message-ID or a
    Date gets svc's."""
    valid = _recipients(rcpts, "rcpts")
    local = _local_part(from_local)
    if not raw.strip() or len(raw) > MAX_RAW_BYTES:
        raise BadRequest.of_field("raw", f"must be a message of 1 to {MAX_RAW_BYTES} bytes")
    grant = await _grant(uow, project)
    mail_id = new_id("mail")
    now = utcnow()
    crlf = _crlf(raw)
    headers = BytesHeaderParser(policy=email.policy.compat32).parsebytes(crlf)
    added = b""
    own_id = str(headers.get("Message-ID") or "").strip().strip("<>")
    if not own_id:
        own_id = f"{mail_id}@{grant.address}"
        added += f"Message-ID: <{own_id}>\r\n".encode()
    if headers.get("Date") is None:
        added += f"Date: {format_datetime(now)}\r\n".encode()
    subject = " ".join(str(headers.get("Subject") or "").split())
    return await _queue(uow, project, grant, mail_id=mail_id, now=now, sender=f"{local}@{grant.address}",
                        rcpts=valid, raw=added + crlf, subject=subject, message_id=own_id[:400])


async def _grant(uow: UnitOfWork, project: Project) -> EmailGrant:
    """The project's grant, held to the commit (the hourly cap's count), or 403."""
    grant = await queries.grant_locked(uow.session, project.id)
    if grant is None:
        raise errors.EmailNotGranted()
    return grant


async def _queue(uow: UnitOfWork, project: Project, grant: EmailGrant, *, mail_id: str, now: datetime,
                 sender: str, rcpts: list[str], raw: bytes, subject: str, message_id: str) -> MailLogEntry:
    """The cap, the suppression list, the signature, the blob and the row with its job."""
    org = await uow.session.get(Org, project.org_id)
    assert org is not None
    cap = orgs.limits_of(uow.ctx.config, org.plan).mail_per_hour
    count, oldest = await queries.sent_since(uow.session, project.id, now - _HOUR)
    if count >= cap:
        wait = max(1, math.ceil(((oldest or now) + _HOUR - now).total_seconds()))
        raise errors.HourlyCap(details={"retryAfter": wait, "hourlyCap": cap}, headers={"Retry-After": str(wait)})
    dropped = await queries.suppressed(uow.session, project.id, [r.lower() for r in rcpts])
    keep = [r for r in rcpts if r.lower() not in dropped]
    row = MailLogEntry(id=mail_id, project_id=project.id, org_id=project.org_id, direction=MailDirection.outbound,
                       from_addr=sender, to_addr=", ".join(keep or rcpts)[:2000], subject=subject[:MAX_SUBJECT],
                       outcome=MailOutcome.queued if keep else MailOutcome.suppressed, size=0, spf=None,
                       raw_key=None, message_id=message_id, attempts=0, created_at=now, updated_at=now,
                       detail=f"{len(dropped)} recipient(s) on the suppression list dropped" if dropped else None)
    if keep:
        domain = mail_domain(uow.ctx) or grant.address
        signed = dkim.sign(raw, await dkim.signing_key(uow.session, uow.ctx.keys, domain))
        row.raw_key, row.size = raw_key(project.id, mail_id), len(signed)
        await _store(uow, row.raw_key, signed)
        uow.enqueue(EmailJob.send, {"mail_id": mail_id}, max_attempts=MAX_ATTEMPTS)
    uow.session.add(row)
    await uow.session.flush()
    return row


async def _store(uow: UnitOfWork, key: str, data: bytes) -> None:
    """The blob before the commit (the job reads it), removed if the commit does not happen."""
    blobs = uow.ctx.blobs
    path = _temp_file(uow.ctx, data)
    try:
        await blobs.put_file(key, path)
    finally:
        _discard(path)

    async def remove() -> None:
        await blobs.delete(key)

    uow.after_rollback(remove)


def _temp_file(ctx: AppContext, data: bytes = b"") -> Path:
    tmp = ctx.config.settings.tmp_dir()
    tmp.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="svc-mail-", suffix=".eml", dir=tmp)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return Path(name)


def _discard(path: Path) -> None:
    path.unlink(missing_ok=True)


def _take(path: Path) -> bytes:
    try:
        return path.read_bytes()
    finally:
        _discard(path)


def _recipients(addresses: list[str], field: str) -> list[str]:
    """Each address checked (syntax only: a relay finds out the rest), in its normal form; ASCII
    local parts only (a relay without SMTPUTF8 could not take the rest), an IDN domain as punycode."""
    if not 1 <= len(addresses) <= MAX_RECIPIENTS:
        raise BadRequest.of_field(field, f"must name 1 to {MAX_RECIPIENTS} addresses")
    valid: list[str] = []
    for address in addresses:
        try:
            checked = validate_email(address, check_deliverability=False, allow_smtputf8=False)
            valid.append(checked.ascii_email or checked.normalized)
        except (EmailNotValidError, TypeError):
            raise BadRequest.of_field(field, "must hold email addresses only (name@example.com)") from None
    return list(dict.fromkeys(valid))


def _local_part(local: str | None) -> str:
    if local is None or local == "":
        return SENDER_LOCAL_PART
    if len(local) > 64 or not schemas.LOCAL_PART.match(local):
        raise BadRequest.of_field("from", "must be a local part (letters, digits, dots, no @), at most 64 characters")
    return local


def _crlf(raw: bytes) -> bytes:
    """The wire's line ends: what the signature is computed over is what the relay receives."""
    return re.sub(rb"\r?\n", b"\r\n", raw)


# -- the email.send job ---------------------------------------------------------------------------


@use_case(Tx.READ_THEN_WRITE)  # the SMTP exchange holds nothing of the store
async def deliver(run: JobRun) -> None:
    """The stored message to the relay. 250: `sent`, with the relay's queue id (the provider's
    notifications name it). 5xx: `failed`. 4xx or no answer: raised, so the job queue retries with
    its backoff; `failed` on the last attempt. At least once: a process dying between the relay's
    250 and the commit sends again, with the same Message-ID."""
    mail_id = str(run.payload["mail_id"])
    row = await queries.queued(run.session, mail_id)
    if row is None or row.raw_key is None:
        return  # pruned, or settled already
    sender, rcpts, key = row.from_addr, [r.strip() for r in row.to_addr.split(",") if r.strip()], row.raw_key
    await run.uow.close_reads()
    relay = run.ctx.adapters.relay
    try:
        raw = await _read(run.ctx, key)
        if relay is None:
            raise MailDeferred("no relay yet")
        queue_id = await relay.send_raw(sender, rcpts, raw)
    except MailRejected as exc:
        await _settle(run, MailOutcome.failed, detail=_detail(exc))
        return
    except Exception as exc:  # MailDeferred, a blob store hiccup, a relay failing in a way it did not classify
        said = str(exc) if isinstance(exc, MailDeferred) else type(exc).__name__
        if run.last_attempt:
            await _settle(run, MailOutcome.failed, detail=f"gave up after {run.attempt} attempts: {_detail(exc)}")
            return
        log.info("mail %s deferred (attempt %d): %s", mail_id, run.attempt, said)
        raise MailDeferred(said) from None
    await _settle(run, MailOutcome.sent, provider_id=queue_id)


async def _settle(run: JobRun, outcome: MailOutcome, *, provider_id: str | None = None,
                  detail: str | None = None) -> None:
    mail_id = str(run.payload["mail_id"])
    session = await run.uow.begin_write()
    await queries.settle(session, mail_id, outcome=outcome, at=utcnow(), attempts=run.attempt,
                         provider_id=provider_id, detail=detail)
    # Never the detail: the relay's words may name a recipient.
    log.log(logging.INFO if outcome == MailOutcome.sent else logging.WARNING, "mail %s %s (attempt %d)",
            mail_id, outcome.value, run.attempt)


def _detail(exc: Exception) -> str:
    """What the log entry says of a failure: the cause, and the relay's own words when it gave some."""
    if isinstance(exc, (MailRejected, MailDeferred)):
        return f"{exc}: {exc.said}" if exc.said else str(exc)
    return type(exc).__name__


async def _read(ctx: AppContext, key: str) -> bytes:
    path = _temp_file(ctx)
    try:
        await ctx.blobs.get_to_file(key, path)
    except BaseException:
        _discard(path)
        raise
    return _take(path)
