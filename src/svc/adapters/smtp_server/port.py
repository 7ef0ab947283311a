"""What the inbound SMTP server asks of svc, and what svc reads of it.

The server speaks SMTP (rate bounds, size, SPF, the headers it adds); the email area is the
`Mailbox` it delivers to: which recipients are svc's, and storing a message (raw bytes, log row,
the hand-off to the project's worker) before the server answers 250."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol


class Unstorable(Exception):
    """svc could not store the message now (blob store or state store): the server answers 451 so
    the sender tries again later; nothing was accepted."""


class NoRecipient(Exception):
    """None of the message's recipients is svc's any more (revoked between RCPT and DATA): 550."""


@dataclass(frozen=True)
class InboundMessage:
    mail_from: str  # the envelope sender ("" for a bounce's <>)
    rcpts: tuple[str, ...]  # the envelope recipients the server accepted (each a granted address)
    content: bytes  # the message as the client sent it
    added: bytes  # the header lines the server adds on top (Received, Authentication-Results), CRLF-ended
    client_ip: str
    helo: str
    spf: str  # SpfResult's value: pass, fail, softfail, neutral, none, temperror, permerror

    @property
    def raw(self) -> bytes:
        """What is stored: the added headers, then the message as sent."""
        return self.added + self.content

    def dedupe_key(self, rcpts: tuple[str, ...]) -> str:
        """sha256 (hex) of the envelope (sender, these recipients) and the bytes as sent: a sender
        retrying a message whose 250 it never heard sends the same, and it is stored once."""
        digest = hashlib.sha256()
        digest.update(self.mail_from.lower().encode() + b"\0")
        digest.update(",".join(sorted(r.lower() for r in rcpts)).encode() + b"\0")
        digest.update(self.content)
        return digest.hexdigest()


@dataclass(frozen=True)
class Certificate:
    """A certificate for STARTTLS: the chain and its key, PEM."""

    fullchain_pem: str
    key_pem: str


class Mailbox(Protocol):
    """The email area's side (domains/email/inbound.py)."""

    def hostname(self) -> str | None:
        """The name the server greets with and writes in Received (the mail domain); None: the
        machine's."""
        ...

    async def accepts(self, address: str) -> bool:
        """Whether `address` (local@domain) is a granted project's address now."""
        ...

    async def deliver(self, message: InboundMessage) -> None:
        """Store the message for each project it is addressed to, durably, before returning; a
        message stored before (the same dedupe key) is not stored again. Raises Unstorable (451)
        or NoRecipient (550)."""
        ...

    async def certificate(self, hostname: str) -> Certificate | None:
        """The certificate svc holds for `hostname` (the edge's), for STARTTLS; None: none."""
        ...


class SmtpServer(Protocol):
    # The port it listens on (None: not listening).
    port: int | None

    def deliver_to(self, mailbox: Mailbox) -> None:
        """Where accepted mail goes (the email area hands itself in before the server starts)."""
        ...
