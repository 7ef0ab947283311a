"""SMTP delivery (smtplib in a thread). SVC_SMTP_URL (svc's own mail) and SVC_SMTP_RELAY_URL (the
projects' mail, adapters/mail_relay): smtp://[user:pass@]host[:port] for plain or
STARTTLS-when-offered, smtps:// for implicit TLS."""

from __future__ import annotations

import asyncio
import re
import smtplib
import ssl
from collections.abc import Callable, Sequence
from email.message import EmailMessage
from typing import TypeVar
from urllib.parse import unquote, urlsplit

from svc.adapters.mail.port import MailDeferred, MailRejected

T = TypeVar("T")

# What a relay's 250 to DATA names its queued message by: Postfix "2.0.0 Ok: queued as 4AbC12",
# Amazon SES "Ok 0100018c...-000000" (the id its notifications carry as mail.messageId).
_QUEUE_ID = re.compile(r"(?:queued as|^(?:\d\.\d\.\d\s+)?ok:?)\s+(\S+)\s*$", re.IGNORECASE)


def queue_id(reply: str) -> str:
    """The queue id in a relay's 250 reply when it names one, else the reply's text."""
    text = reply.strip()
    found = _QUEUE_ID.search(text)
    return (found.group(1) if found else text)[:400]


class SmtpSender:
    def __init__(self, url: str, *, timeout: float = 30.0, setting: str = "SVC_SMTP_URL") -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps"):
            raise ValueError(f"{setting} must start with smtp:// or smtps://")
        self.implicit_tls = parts.scheme == "smtps"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (465 if self.implicit_tls else 25)
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        self.timeout = timeout
        self.description = f"sending mail through SMTP at {self.host}:{self.port}"

    async def send(self, message: EmailMessage) -> None:
        await asyncio.to_thread(self._session, lambda client: client.send_message(message))

    async def send_raw(self, sender: str, recipients: Sequence[str], raw: bytes) -> str:
        """The bytes as they are, to the envelope's recipients; returns the queue id of the server's
        250 (queue_id). A recipient refused for good while others are taken is dropped (the
        server's answer to the rest stands); one deferred defers the whole message."""
        return await asyncio.to_thread(self._session, lambda client: _transaction(client, sender, recipients, raw))

    def _session(self, exchange: Callable[[smtplib.SMTP], T]) -> T:
        try:
            client: smtplib.SMTP
            if self.implicit_tls:
                client = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout,
                                          context=ssl.create_default_context())
            else:
                client = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            with client:
                client.ehlo()
                if not self.implicit_tls and client.has_extn("starttls"):
                    client.starttls(context=ssl.create_default_context())
                    client.ehlo()
                if self.username and self.password:
                    client.login(self.username, self.password)
                return exchange(client)
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            said = "; ".join(f"{code} {_words(words)}" for code, words in exc.recipients.values())
            if all(500 <= c < 600 for c in codes):
                raise MailRejected(f"recipient refused ({codes[0]})", said) from None
            raise MailDeferred(f"recipient deferred ({codes[0]})", said) from None
        except (smtplib.SMTPAuthenticationError, smtplib.SMTPConnectError, smtplib.SMTPHeloError) as exc:
            # Wrong credentials or a server turning us away: a fault of the setup, not of this
            # message, so keep it for when the setup is fixed rather than drop it as refused.
            raise MailDeferred(f"the SMTP server did not let us send ({exc.smtp_code})") from None
        except smtplib.SMTPResponseException as exc:
            said = f"{exc.smtp_code} {_words(exc.smtp_error)}"
            if 500 <= exc.smtp_code < 600:
                raise MailRejected(f"server refused the message ({exc.smtp_code})", said) from None
            raise MailDeferred(f"server deferred the message ({exc.smtp_code})", said) from None
        except (OSError, smtplib.SMTPException) as exc:
            raise MailDeferred(f"could not reach the SMTP server: {type(exc).__name__}") from None


def _words(said: bytes | str) -> str:
    text = said.decode("utf-8", "replace") if isinstance(said, bytes) else said
    return " ".join(text.split())[:200]


def _transaction(client: smtplib.SMTP, sender: str, recipients: Sequence[str], raw: bytes) -> str:
    """MAIL, RCPT each, DATA: smtplib's sendmail, but keeping DATA's reply (the relay's queue id)."""
    code, said = client.mail(sender)
    if code != 250:
        client.rset()
        raise smtplib.SMTPSenderRefused(code, said, sender)
    refused: dict[str, tuple[int, bytes]] = {}
    for rcpt in recipients:
        code, said = client.rcpt(rcpt)
        if code not in (250, 251):
            refused[rcpt] = (code, said)
    if len(refused) == len(recipients) or any(code < 500 for code, _ in refused.values()):
        # Every one refused, or one only for now: the message waits (or fails) as a whole, so a
        # retry never sends twice to those already taken.
        client.rset()
        raise smtplib.SMTPRecipientsRefused(refused)  # type: ignore[arg-type]
    code, said = client.data(raw)
    if code != 250:
        client.rset()
        raise smtplib.SMTPDataError(code, said)
    return queue_id(_words(said))
