"""A real SMTP server for tests (aiosmtpd in its own thread) that keeps what it receives, and
helpers for tests of outgoing mail.

    with SmtpSink() as sink:            # listens on 127.0.0.1, a free port
        sink.url                        # smtp://127.0.0.1:<port>
        sink.refuse("bob@example.com")  # RCPT answered 550 (permanent)
        sink.defer("eve@example.com")   # RCPT answered 451 (temporary)
        sink.accept("eve@example.com")  # back to 250
        await sink.wait_for(1)          # the messages accepted so far

`stop()` and `start()` again keep the port, so a test can take the server away and bring it back.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from types import TracebackType

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword
from aiosmtpd.smtp import Session as SmtpSession
from sqlalchemy import select, update

from svc.adapters.mail.smtp import SmtpSender
from svc.app import build_registry
from svc.context import Adapters
from svc.domains.mail.kinds import MailJob
from svc.jobs.worker import Worker
from svc.kit.clock import utcnow
from svc.models import Job, JobStatus, OutboundMail
from svc.settings import Settings
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.wait import WAIT_SECONDS, until


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    at: datetime

    @property
    def text(self) -> str:
        """The plain-text body with the wire's CRLF line ends as \\n."""
        body = self.message.get_body(("plain",))
        assert body is not None
        content = body.get_content()
        assert isinstance(content, str)
        return content.replace("\r\n", "\n")


@dataclass
class _Handler:
    refused: set[str] = field(default_factory=set)
    deferred: set[str] = field(default_factory=set)
    received: list[Received] = field(default_factory=list)
    # Every RCPT seen, with the answer given: ("bob@example.com", 550).
    rcpt_log: list[tuple[str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(self, server: SMTP, session: SmtpSession, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        key = address.lower()
        with self.lock:
            if key in self.refused:
                self.rcpt_log.append((key, 550))
                return "550 5.1.1 No such user here"
            if key in self.deferred:
                self.rcpt_log.append((key, 451))
                return "451 4.3.0 Try again later"
            self.rcpt_log.append((key, 250))
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: SmtpSession, envelope: Envelope) -> str:
        raw = envelope.original_content or envelope.content
        assert isinstance(raw, bytes)
        message = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self.lock:
            self.received.append(Received(mail_from=str(envelope.mail_from), rcpt_tos=list(envelope.rcpt_tos),
                                          message=message, at=datetime.now(UTC)))
        return "250 Message accepted for delivery"


class _Controller(Controller):
    """Controller that may bind port 0: it learns the real port before its start-up handshake."""

    def _trigger_server(self) -> None:
        assert isinstance(self.server, asyncio.Server)
        if self.port == 0:
            self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()  # type: ignore[no-untyped-call]


class SmtpSink:
    def __init__(self, *, credentials: tuple[str, str] | None = None) -> None:
        """With `credentials`, the server offers AUTH (over plain text: a test server only) and
        refuses a login with other credentials (535)."""
        self._handler = _Handler()
        self._controller: _Controller | None = None
        self._port = 0
        self._credentials = credentials

    def _authenticate(self, server: SMTP, session: SmtpSession, envelope: Envelope, mechanism: str,
                      auth_data: object) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and self._credentials == (
            auth_data.login.decode(), auth_data.password.decode())
        return AuthResult(success=ok, handled=False)

    @property
    def running(self) -> bool:
        return self._controller is not None

    @property
    def port(self) -> int:
        assert self._port, "start the sink first"
        return self._port

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Listen (again): on a free port the first time, on the same port after stop()."""
        assert self._controller is None, "already running"
        # A controller's event loop closes when it stops, so each start takes a new one.
        auth: dict[str, object] = {}
        if self._credentials:
            auth = {"authenticator": self._authenticate, "auth_require_tls": False}
        controller = _Controller(self._handler, hostname="127.0.0.1", port=self._port, **auth)
        controller.start()
        self._controller = controller
        self._port = int(controller.port)

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> SmtpSink:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def refuse(self, address: str) -> None:
        with self._handler.lock:
            self._handler.refused.add(address.lower())

    def defer(self, address: str) -> None:
        with self._handler.lock:
            self._handler.deferred.add(address.lower())

    def accept(self, address: str) -> None:
        """Undo refuse() and defer() for this address."""
        with self._handler.lock:
            self._handler.refused.discard(address.lower())
            self._handler.deferred.discard(address.lower())

    @property
    def messages(self) -> list[Received]:
        with self._handler.lock:
            return list(self._handler.received)

    def rcpt_answers(self, address: str) -> list[int]:
        """The codes given to every RCPT TO for this address, in order."""
        with self._handler.lock:
            return [code for addr, code in self._handler.rcpt_log if addr == address.lower()]

    def to(self, address: str) -> list[Received]:
        return [m for m in self.messages if address.lower() in (r.lower() for r in m.rcpt_tos)]

    async def wait_for(self, count: int, *, to: str | None = None, timeout: float = WAIT_SECONDS) -> list[Received]:
        """Wait until at least `count` messages arrived (to `to` when given); returns them."""

        def arrived() -> list[Received] | None:
            found = self.to(to) if to else self.messages
            return found if len(found) >= count else None

        return list(await until(arrived, timeout=timeout, what=f"{count} message(s){f' to {to}' if to else ''}"))


@asynccontextmanager
async def running_smtp_svc(settings: Settings, sink: SmtpSink, *, run_workers: bool = True) -> AsyncIterator[Svc]:
    """A running svc whose outgoing mail goes to `sink` over SMTP (the sink may be stopped)."""
    async with running_svc(configured(settings, smtp_url=sink.url), Adapters(mail=SmtpSender(sink.url, timeout=10)),
                           run_workers=run_workers) as svc:
        yield svc


@dataclass(frozen=True)
class Mail:
    """A queued message with its delivery job, as a test looks at it."""

    id: str
    to_addr: str
    subject: str
    body: str
    invite_id: str | None
    sent_at: datetime | None
    failed_at: datetime | None
    # The message's own (final) error, else its job's latest.
    last_error: str | None
    attempts: int
    next_attempt_at: datetime
    job_status: str


async def outbox(svc: Svc) -> list[Mail]:
    """Every message of the outbox with its mail.send job, oldest first."""
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.scalars(select(OutboundMail).order_by(OutboundMail.created_at, OutboundMail.id))).all()
        jobs = {str(j.payload.get("mail_id")): j
                for j in (await s.scalars(select(Job).where(Job.kind == MailJob.send))).all()}
    return [Mail(id=r.id, to_addr=r.to_addr, subject=r.subject, body=r.body, invite_id=r.invite_id,
                 sent_at=r.sent_at, failed_at=r.failed_at,
                 last_error=r.last_error or jobs[r.id].last_error, attempts=jobs[r.id].attempts,
                 next_attempt_at=jobs[r.id].run_at, job_status=jobs[r.id].status) for r in rows]


async def deliver_due(svc: Svc, *, worker: str = "test-sender") -> int:
    """Run the due jobs (mail among them) with a worker of the test's own, until none is due;
    returns how many messages the mail server accepted meanwhile, by the outbox's sentAt."""
    before = sum(m.sent_at is not None for m in await outbox(svc))
    ctx = replace(svc.ctx, worker_name=worker)
    runner = Worker(ctx, build_registry(ctx.config))
    for _ in range(50):
        if not await runner.run_once():
            return sum(m.sent_at is not None for m in await outbox(svc)) - before
    raise AssertionError("jobs were still due after 50 rounds")


async def make_due(svc: Svc) -> None:
    """As if every waiting message's backoff had passed."""
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Job).where(Job.kind == MailJob.send, Job.status == JobStatus.queued)
                        .values(run_at=utcnow() - timedelta(seconds=1)))


async def eventually(check: Callable[[], Awaitable[bool]], *, timeout: float = WAIT_SECONDS,
                     what: str = "condition") -> None:
    """Poll `check` until it is true (no timing assertion: the bound only stops a hung test)."""
    await until(check, timeout=timeout, what=what)
