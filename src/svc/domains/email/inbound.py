"""Mail received by svc's SMTP server (adapters/smtp_server): which recipients are svc's, and
storing a message, durably, before the server answers 250 (docs/email.md, "Inbound").

A message is stored once per project it is addressed to (recipients at two projects: two rows,
each with its own raw copy): the raw bytes in the blob store first, then one transaction writes
the log row and enqueues its hand-off to the project's worker. A crash before the commit leaves at
most a blob no row points to, and the sender, never answered 250, sends again; a crash after it,
before the 250 reached the sender, makes the sender send again too, and the dedupe key (the
envelope and bytes) finds the row: answered 250, not stored twice."""

from __future__ import annotations

import asyncio
import contextlib
import email.policy
import logging
import os
import tempfile
from dataclasses import dataclass
from email.header import decode_header, make_header
from email.parser import BytesHeaderParser
from pathlib import Path

from svc.adapters.smtp_server.port import Certificate, InboundMessage, NoRecipient, Unstorable
from svc.context import AppContext
from svc.domains.certificates.service import EdgeCertificates
from svc.domains.email import queries
from svc.domains.email.kinds import EmailJob
from svc.domains.email.service import mail_domain, raw_key
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import MailDirection, MailLogEntry, MailOutcome
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

log = logging.getLogger("svc.email")

# The log row's columns' lengths (models/email.py).
_FROM, _TO, _SUBJECT, _MESSAGE_ID = 320, 2000, 400, 400


def domain_of(address: str) -> str:
    return address.rpartition("@")[2].strip().lower().rstrip(".")


@dataclass(frozen=True)
class _Headers:
    subject: str
    message_id: str | None


def _headers(content: bytes) -> _Headers:
    """The Subject (RFC 2047 words decoded) and Message-ID (without <>) of a message as sent. The
    header block only, with the plain parser (the modern policy's full parse of every header cost
    a third of a millisecond a message, bench/mail.py)."""
    head = content.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    try:
        parsed = BytesHeaderParser(policy=email.policy.compat32).parsebytes(head)
        raw_subject = parsed.get("subject")
        subject = str(make_header(decode_header(str(raw_subject)))) if raw_subject is not None else ""
        message_id = str(parsed.get("message-id", "") or "").strip().strip("<>").strip() or None
    except Exception:  # a header the parser cannot read: the row keeps what it can
        return _Headers("", None)
    subject = " ".join(subject.split())
    return _Headers(subject[:_SUBJECT], message_id[:_MESSAGE_ID] if message_id else None)


@dataclass(frozen=True)
class _Target:
    project_id: str
    org_id: str
    rcpts: tuple[str, ...]
    dedupe_key: str
    mail_id: str


@use_case(Tx.READ_THEN_WRITE)  # the raw copies are written to the blob store with nothing of the store held
async def receive(uow: UnitOfWork, message: InboundMessage) -> list[str]:
    """Store `message` for each project it is addressed to; the ids of the rows written (none when
    every project had it already). NoRecipient when no recipient is a granted address any more."""
    by_domain: dict[str, list[str]] = {}
    for rcpt in message.rcpts:
        by_domain.setdefault(domain_of(rcpt), []).append(rcpt)
    # A recipient revoked since its RCPT is left out; the others still get the message.
    held = await queries.holders(uow.session, list(by_domain))
    if not held:
        raise NoRecipient()
    wanted = {domain: message.dedupe_key(tuple(by_domain[domain])) for domain in held}
    stored = await queries.stored_before(uow.session, [(held[d][0], key) for d, key in wanted.items()])
    targets = [_Target(held[d][0], held[d][1], tuple(by_domain[d]), key, new_id("mail"))
               for d, key in wanted.items() if (held[d][0], key) not in stored]
    if not targets:
        return []
    await uow.close_reads()
    await _store_raw(uow, message.raw, [raw_key(t.project_id, t.mail_id) for t in targets])
    session = await uow.begin_write()
    headers, now = _headers(message.content), utcnow()
    for t in targets:
        session.add(MailLogEntry(
            id=t.mail_id, project_id=t.project_id, org_id=t.org_id, direction=MailDirection.inbound,
            from_addr=message.mail_from[:_FROM], to_addr=",".join(t.rcpts)[:_TO], subject=headers.subject,
            outcome=MailOutcome.received, size=len(message.raw), spf=message.spf,
            raw_key=raw_key(t.project_id, t.mail_id), message_id=headers.message_id, dedupe_key=t.dedupe_key,
            client_ip=message.client_ip, attempts=0, created_at=now, updated_at=now))
        uow.enqueue(EmailJob.to_worker, {"mail_id": t.mail_id})
    await session.flush()
    return [t.mail_id for t in targets]


async def _store_raw(uow: UnitOfWork, raw: bytes, keys: list[str]) -> None:
    """The raw message under each key (durable when put_file returns); removed again if the row
    is not written (a rollback)."""
    blobs = uow.ctx.blobs

    async def remove() -> None:
        for key in keys:
            await blobs.delete(key)

    uow.after_rollback(remove)
    path = await asyncio.to_thread(_temp_file, uow.ctx.settings.tmp_dir(), raw)
    try:
        for key in keys:
            await blobs.put_file(key, path)
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)


def _temp_file(tmp_dir: Path, raw: bytes) -> Path:
    tmp_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=tmp_dir, prefix="mail-in-", suffix=".eml")
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    return Path(name)


class Inbound:
    """The SMTP server's Mailbox (adapters/smtp_server/port.py), handed in by the area's lifespan."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def hostname(self) -> str | None:
        return mail_domain(self.ctx)

    async def accepts(self, address: str) -> bool:
        """Read at every RCPT: a revoke refuses the next message (550) without waiting on a cache."""
        domain = domain_of(address)
        if "@" not in address or not domain:
            return False
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return bool(await queries.holders(uow.session, [domain]))

    async def deliver(self, message: InboundMessage) -> None:
        try:
            async with unit_of_work(self.ctx, Tx.READ_THEN_WRITE) as uow:
                stored = await receive(uow, message)
        except NoRecipient:
            raise
        except Exception as exc:
            log.warning("a received message could not be stored: %s", exc, exc_info=True)
            raise Unstorable(type(exc).__name__) from exc
        if stored:
            log.info("received mail %s from %s (spf=%s)", ",".join(stored), message.client_ip, message.spf)

    async def certificate(self, hostname: str) -> Certificate | None:
        """The edge's certificate for the server's name: its own, or a wildcard one above it."""
        wildcard = "*." + hostname.partition(".")[2]
        with contextlib.suppress(RuntimeError):  # no keyring yet: no certificates either
            for served in await EdgeCertificates(self.ctx).certificates():
                if served.name.lower() in (hostname.lower(), wildcard.lower()) and served.fullchain_pem:
                    return Certificate(fullchain_pem=served.fullchain_pem, key_pem=served.key_pem)
        return None
