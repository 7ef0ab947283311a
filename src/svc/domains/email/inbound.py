"""Mail received by svc's SMTP server (adapters/smtp_server): which recipients are svc's, and
storing a message, durably, before the server answers 250 (docs/email.md, "Inbound").

A message is stored once per project it is addressed to (recipients at two projects: two rows,
each with its own raw copy): the raw bytes in the blob store first, then one transaction writes
the log row and enqueues its hand-off to the project's worker. A crash before the commit leaves at
most a blob no row points to, and the sender, never answered 250, sends again; a crash after it,
before the 250 reached the sender, makes the sender send again too, and the dedupe key (the
envelope and bytes) finds the row: answered 250, not stored twice.

Messages arriving while a batch is written wait for the next one and go in together, in one unit
of work (a group commit, as the billing webhook's deliveries: domains/billing/deliveries.py); each
session is answered once the transaction holding its message has committed. A batch that fails is
written again one message per transaction, so a message svc cannot store fails alone (451)."""

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
from svc.domains.email import queries, records
from svc.domains.email.accepted import Accepted
from svc.domains.email.kinds import EmailJob
from svc.domains.email.service import raw_key
from svc.kit.clock import utcnow
from svc.kit.group_commit import GroupCommit
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
async def receive(uow: UnitOfWork, messages: list[InboundMessage]) -> list[list[str] | None]:
    """Store each message for each project it is addressed to, all in one transaction: for each
    message, the ids of the rows written (none when every project had it already), or None when no
    recipient of it is a granted address any more (revoked since its RCPT: 550)."""
    by_domain = [_by_domain(m) for m in messages]
    # A recipient revoked since its RCPT is left out; the others still get the message.
    held = await queries.holders(uow.session, sorted({d for domains in by_domain for d in domains}))
    wanted = [{d: m.dedupe_key(tuple(rcpts)) for d, rcpts in domains.items() if d in held}
              for m, domains in zip(messages, by_domain, strict=True)]
    stored = await queries.stored_before(uow.session, [(held[d][0], key) for w in wanted for d, key in w.items()])
    targets: list[list[_Target]] = []
    for domains, keys in zip(by_domain, wanted, strict=True):
        fresh = [_Target(held[d][0], held[d][1], tuple(domains[d]), key, new_id("mail"))
                 for d, key in keys.items() if (held[d][0], key) not in stored]
        # The same message twice in one batch (a sender retrying at once) is written once.
        seen = {(t.project_id, t.dedupe_key) for ts in targets for t in ts}
        targets.append([t for t in fresh if (t.project_id, t.dedupe_key) not in seen])
    if any(targets):
        await uow.close_reads()
        written = await asyncio.gather(*(_store_raw(uow, m.raw, [raw_key(t.project_id, t.mail_id) for t in ts])
                                         for m, ts in zip(messages, targets, strict=True) if ts),
                                       return_exceptions=True)
        failed = [r for r in written if isinstance(r, BaseException)]
        if failed:
            raise failed[0]
        session = await uow.begin_write()
        now = utcnow()
        for message, ts in zip(messages, targets, strict=True):
            headers = _headers(message.content) if ts else None
            for t in ts:
                assert headers is not None
                session.add(MailLogEntry(
                    id=t.mail_id, project_id=t.project_id, org_id=t.org_id, direction=MailDirection.inbound,
                    from_addr=message.mail_from[:_FROM], to_addr=",".join(t.rcpts)[:_TO],
                    subject=headers.subject, outcome=MailOutcome.received, size=len(message.raw), spf=message.spf,
                    raw_key=raw_key(t.project_id, t.mail_id), message_id=headers.message_id,
                    dedupe_key=t.dedupe_key, client_ip=message.client_ip, attempts=0, created_at=now,
                    updated_at=now))
                uow.enqueue(EmailJob.to_worker, {"mail_id": t.mail_id})
        await session.flush()
    return [[t.mail_id for t in ts] if keys else None for ts, keys in zip(targets, wanted, strict=True)]


def _by_domain(message: InboundMessage) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for rcpt in message.rcpts:
        grouped.setdefault(domain_of(rcpt), []).append(rcpt)
    return grouped


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


# Messages in one transaction at most (several batches are written at once: while one writes its
# raw copies, the next reads; on SQLite their writes take turns).
MAX_BATCH = 32


class Inbound:
    """The SMTP server's Mailbox (adapters/smtp_server/port.py), handed in by the area's lifespan."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        # A message svc cannot store fails alone, as 451: its sender tries again.
        self._batches: GroupCommit[InboundMessage, list[str] | None] = GroupCommit(
            self._write, what="received messages", log=log, max_batch=MAX_BATCH,
            alone=lambda exc: Unstorable(type(exc).__name__))

    def hostname(self) -> str | None:
        """The host the mail domain's MX records name (records.py): the server's name in its
        greeting and its headers, and the name its STARTTLS certificate is for."""
        return records.mx_host(self.ctx)

    async def accepts(self, address: str) -> bool:
        """Whether an address is a granted project's, for RCPT: read from the store at most once a
        second per address (accepted.py); receiving reads the grants again as it writes."""
        domain = domain_of(address)
        if "@" not in address or not domain:
            return False
        answers = self.ctx.state_of(Accepted)
        known = answers.get(domain)
        if known is not None:
            return known
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            held = bool(await queries.holders(uow.session, [domain]))
        answers.keep(domain, held)
        return held

    async def deliver(self, message: InboundMessage) -> None:
        try:
            stored = await self._batches.submit(message)
        except RuntimeError as stopped:  # svc stopping: never answered 250, the sender tries again
            raise Unstorable(str(stopped)) from None
        if stored is None:
            raise NoRecipient()
        if stored:
            log.info("received mail %s from %s (spf=%s)", ",".join(stored), message.client_ip, message.spf)

    async def _write(self, batch: list[InboundMessage]) -> list[list[str] | None]:
        async with unit_of_work(self.ctx, Tx.READ_THEN_WRITE) as uow:
            return await receive(uow, batch)

    async def certificate(self, hostname: str) -> Certificate | None:
        """The edge's certificate for the server's name: its own, or a wildcard one above it."""
        wildcard = "*." + hostname.partition(".")[2]
        with contextlib.suppress(RuntimeError):  # no keyring yet: no certificates either
            for served in await EdgeCertificates(self.ctx).certificates():
                if served.name.lower() in (hostname.lower(), wildcard.lower()) and served.fullchain_pem:
                    return Certificate(fullchain_pem=served.fullchain_pem, key_pem=served.key_pem)
        return None
