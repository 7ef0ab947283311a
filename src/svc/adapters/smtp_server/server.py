"""svc's inbound SMTP server: aiosmtpd's protocol on an asyncio server in svc's own process.

It refuses what is not svc's (550 for a recipient that is no granted address), what is too large
(552, SIZE advertised), and a flood (451 past the rate of a client address or of a project's
address: a well-behaved sender retries later). It checks SPF, adds Received and
Authentication-Results on top, and answers 250 only once the Mailbox has stored the message
(durably: its commit); anything svc cannot store is answered 451, so the sender keeps the message
and tries again. No AUTH is offered: this is an MX for the projects' addresses, never a relay."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import ssl
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

import dns.resolver
from aiosmtpd.smtp import SMTP, Envelope, Session

from svc.adapters.smtp_server.port import InboundMessage, Mailbox, NoRecipient, Unstorable
from svc.adapters.smtp_server.settings import SmtpServerSettings
from svc.adapters.smtp_server.spf import SpfChecker

log = logging.getLogger("svc.email.smtp")

# Recipients one message may have (RFC 5321 4.5.3.1.8 asks servers to take at least 100).
MAX_RECIPIENTS = 100
# A client silent this long is disconnected (RFC 5321 4.5.3.2 suggests minutes per command).
IDLE_SECONDS = 120.0
# How often the edge's certificate for STARTTLS is looked up again (a renewal is picked up).
TLS_REFRESH_SECONDS = 3600.0
# Buckets not used for this long are forgotten (their memory bounded by what is recent).
BUCKET_IDLE_SECONDS = 600.0


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class RateBounds:
    """Token buckets in this process's memory, by key: `per_minute` messages a minute, a burst of as
    many. One svc process receives for its port; several processes behind one MX would each keep
    their own (docs/email.md)."""

    per_minute: int
    buckets: dict[str, _Bucket] = field(default_factory=dict)
    # Seconds, only ever compared (a test stops it: nothing refills while it asserts a refusal).
    clock: Callable[[], float] = time.monotonic
    swept: float = field(default_factory=time.monotonic)

    def take(self, key: str) -> bool:
        now = self.clock()
        if now - self.swept > BUCKET_IDLE_SECONDS:
            self.buckets = {k: b for k, b in self.buckets.items() if now - b.at < BUCKET_IDLE_SECONDS}
            self.swept = now
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = _Bucket(float(self.per_minute), now)
        bucket.tokens = min(float(self.per_minute), bucket.tokens + (now - bucket.at) * self.per_minute / 60.0)
        bucket.at = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True


def _domain(address: str) -> str:
    return address.rpartition("@")[2].lower().rstrip(".")


@dataclass
class Connections:
    """Open sessions by client address, at most `per_ip` each: idle sessions cost memory and a
    timer each, and a client holding hundreds would starve the others."""

    per_ip: int
    open: dict[str, int] = field(default_factory=dict)

    def admit(self, ip: str) -> bool:
        if self.open.get(ip, 0) >= self.per_ip:
            return False
        self.open[ip] = self.open.get(ip, 0) + 1
        return True

    def leave(self, ip: str) -> None:
        left = self.open.get(ip, 0) - 1
        if left > 0:
            self.open[ip] = left
        else:
            self.open.pop(ip, None)


class _Smtp(SMTP):
    def __init__(self, handler: _Handler, connections: Connections, **options: Any) -> None:
        super().__init__(handler, **options)
        self._connections = connections
        self._ip: str | None = None
        self._turned_away = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Called again with the TLS transport after STARTTLS: the session is counted once.
        if self._ip is None and not self._turned_away:
            ip = _ip_of(transport.get_extra_info("peername"))
            if not self._connections.admit(ip):
                self._turned_away = True
                assert isinstance(transport, asyncio.WriteTransport)
                transport.write(b"421 4.7.0 Too many connections from your address; try again later\r\n")
                transport.close()
                return
            self._ip = ip
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        if self._turned_away:
            return
        if self._ip is not None:
            self._connections.leave(self._ip)
            self._ip = None
        super().connection_lost(error)

    def eof_received(self) -> bool | None:
        return False if self._turned_away else super().eof_received()

    async def smtp_AUTH(self, arg: str) -> None:
        await self.push("502 5.5.1 AUTH is not offered: this server only receives mail for its own addresses")


class _Handler:
    """aiosmtpd's hooks (their names are aiosmtpd's)."""

    def __init__(self, server: InboundSmtpServer) -> None:
        self.server = server

    async def handle_EHLO(self, server: SMTP, session: Session, envelope: Envelope, hostname: str,
                          responses: list[str]) -> list[str]:
        session.host_name = hostname
        return [r for r in responses if not r[4:].upper().startswith("AUTH")]

    async def handle_MAIL(self, server: SMTP, session: Session, envelope: Envelope, address: str,
                          mail_options: list[str]) -> str:
        if not self.server.per_ip.take(_peer_ip(session)):
            return "451 4.7.1 Too many messages from your address; try again later"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        if len(envelope.rcpt_tos) >= MAX_RECIPIENTS:
            return "452 4.5.3 Too many recipients"
        mailbox = self.server.mailbox
        try:
            known = mailbox is not None and await mailbox.accepts(address)
        except Exception:
            log.exception("SMTP: could not look up the recipient %s", address)
            return "451 4.3.0 Cannot check this recipient now; try again later"
        if not known:
            return "550 5.1.1 No such mailbox here"
        if not self.server.per_address.take(_domain(address)):
            return "451 4.7.1 Too many messages for this address; try again later"
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return await self.server.receive(session, envelope)


def _ip_of(peer: Any) -> str:
    ip = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer or "")
    return ip.removeprefix("::ffff:")


def _peer_ip(session: Session) -> str:
    return _ip_of(session.peer)


class InboundSmtpServer:
    """The SmtpServer port (port.py): built from the settings, told its Mailbox by the email area,
    started by the component."""

    def __init__(self, settings: SmtpServerSettings, *, tmp_dir: Path) -> None:
        self.settings = settings
        self.port: int | None = None
        self.mailbox: Mailbox | None = None
        self.spf = SpfChecker(None)
        self.per_ip = RateBounds(settings.smtp_rate_per_ip)
        self.per_address = RateBounds(settings.smtp_rate_per_address)
        self.connections = Connections(settings.smtp_connections_per_ip)
        # The machine's name (gethostname: getfqdn may wait on DNS) until the mail domain is known.
        self.hostname = settings.smtp_hostname or socket.gethostname()
        self._tmp_dir = tmp_dir
        self._server: asyncio.Server | None = None
        self._tls: ssl.SSLContext | None = None
        self._tls_task: asyncio.Task[None] | None = None
        self._sessions: weakref.WeakSet[SMTP] = weakref.WeakSet()

    def deliver_to(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    @property
    def tls(self) -> bool:
        return self._tls is not None

    async def start(self, *, resolver: dns.resolver.Resolver | None) -> None:
        """Listen (SVC_SMTP_HOST:SVC_SMTP_PORT); raises OSError when the port is taken."""
        self.spf = SpfChecker(resolver)
        if self.settings.smtp_hostname is None and self.mailbox is not None:
            self.hostname = self.mailbox.hostname() or self.hostname
        await self._load_tls()
        if self.settings.smtp_tls_cert is None:
            self._tls_task = asyncio.create_task(self._refresh_tls(), name="svc-smtp-tls")
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._protocol, self.settings.smtp_host, self.settings.smtp_port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._tls_task is not None:
            self._tls_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tls_task
        if self._server is not None:
            self._server.close()
            # Sessions under way end with the server; a DATA not yet answered is retried by its sender.
            for session in list(self._sessions):
                if session.transport is not None:
                    session.transport.close()
            await self._server.wait_closed()
            self._server = None
        self.port = None

    def _protocol(self) -> SMTP:
        session = _Smtp(_Handler(self), self.connections, hostname=self.hostname,
                        data_size_limit=self.settings.smtp_max_message_bytes, enable_SMTPUTF8=True,
                        tls_context=self._tls, timeout=IDLE_SECONDS, loop=asyncio.get_running_loop())
        self._sessions.add(session)
        return session

    async def receive(self, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or (envelope.content if isinstance(envelope.content, bytes) else b"")
        ip = _peer_ip(session)
        helo = session.host_name or ""
        mail_from = envelope.mail_from or ""
        if mail_from == "<>":
            mail_from = ""
        mailbox = self.mailbox
        if mailbox is None or not envelope.rcpt_tos:
            return "451 4.3.0 Not receiving mail now; try again later"
        result = await self.spf.check(ip=ip, mail_from=mail_from, helo=helo)
        added = self._headers(ip=ip, helo=helo, mail_from=mail_from, rcpts=envelope.rcpt_tos, spf=result,
                              tls=session.ssl is not None)
        content = _disarm(content, self.hostname)
        message = InboundMessage(mail_from=mail_from, rcpts=tuple(envelope.rcpt_tos), content=content, added=added,
                                 client_ip=ip, helo=helo, spf=result)
        try:
            await mailbox.deliver(message)
        except NoRecipient:
            return "550 5.1.1 No such mailbox here"
        except Unstorable as exc:
            log.warning("SMTP: a message from %s could not be stored (%s): answered 451", ip, exc)
            return "451 4.3.0 Cannot store the message now; try again later"
        except Exception:
            log.exception("SMTP: a message from %s could not be stored: answered 451", ip)
            return "451 4.3.0 Cannot store the message now; try again later"
        return "250 2.0.0 OK: stored"

    def _headers(self, *, ip: str, helo: str, mail_from: str, rcpts: list[str], spf: str, tls: bool) -> bytes:
        """Received (RFC 5321 4.4) and Authentication-Results (RFC 8601) for the top of the message.
        Values the client chose are kept to printable ASCII with no line break (a header injected
        through HELO or MAIL FROM would look like svc's)."""
        helo_text, sender = _printable(helo) or "unknown", _printable(mail_from) or "<>"
        protocol = "ESMTPS" if tls else "ESMTP"
        rcpt = f"\r\n\tfor <{_printable(rcpts[0])}>" if len(rcpts) == 1 else ""
        received = (f"Received: from {helo_text} ([{ip}])\r\n\tby {self.hostname} (svc) with {protocol}{rcpt};"
                    f"\r\n\t{formatdate(usegmt=True)}\r\n")
        results = f"Authentication-Results: {self.hostname};\r\n\tspf={spf} smtp.mailfrom={sender}\r\n"
        return (results + received).encode("ascii", "replace")  # SVC_SMTP_HOSTNAME is the operator's text

    async def _load_tls(self) -> None:
        settings = self.settings
        try:
            if settings.smtp_tls_cert is not None and settings.smtp_tls_key is not None:
                self._tls = _context(settings.smtp_tls_cert, settings.smtp_tls_key)
                return
            found = await self.mailbox.certificate(self.hostname) if self.mailbox is not None else None
            self._tls = await asyncio.to_thread(self._context_of, found.fullchain_pem, found.key_pem) if found else None
        except Exception:
            log.exception("SMTP: no STARTTLS: the certificate could not be loaded")
            self._tls = None

    async def _refresh_tls(self) -> None:
        while True:
            await asyncio.sleep(TLS_REFRESH_SECONDS)
            await self._load_tls()

    def _context_of(self, chain: str, key: str) -> ssl.SSLContext:
        """ssl loads a certificate from files only: written private, loaded, removed."""
        self._tmp_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self._tmp_dir, prefix="smtp-tls-") as where:
            cert, secret = Path(where) / "chain.pem", Path(where) / "key.pem"
            cert.write_text(chain)
            fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(key)
            return _context(cert, secret)


def _context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


_RESULTS = re.compile(rb"^(Authentication-Results:)([ \t]*(?:\r?\n[ \t]+)*)([^\s;]+)", re.IGNORECASE | re.MULTILINE)


def _disarm(content: bytes, hostname: str) -> bytes:
    """An Authentication-Results header the message already carries in svc's name (a sender's
    forgery: RFC 8601 5) is renamed X-Original-Authentication-Results, in the header block only:
    the one svc adds on top is the only one in its name a reader finds."""
    end = content.find(b"\r\n\r\n")
    head, body = (content, b"") if end < 0 else (content[:end], content[end:])
    ours = hostname.lower().encode()

    def rename(match: re.Match[bytes]) -> bytes:
        return b"X-Original-" + match.group(0) if match.group(3).lower() == ours else match.group(0)

    return _RESULTS.sub(rename, head) + body


def _printable(text: str) -> str:
    return "".join(c for c in text if " " < c < "\x7f")[:200]
