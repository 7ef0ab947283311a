"""SMTP delivery (smtplib in a thread). SVC_SMTP_URL: smtp://[user:pass@]host[:port] for plain or
STARTTLS-when-offered, smtps:// for implicit TLS."""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

from svc.adapters.mail.port import MailDeferred, MailRejected


class SmtpSender:
    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps"):
            raise ValueError("SVC_SMTP_URL must start with smtp:// or smtps://")
        self.implicit_tls = parts.scheme == "smtps"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (465 if self.implicit_tls else 25)
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        self.timeout = timeout
        self.description = f"sending mail through SMTP at {self.host}:{self.port}"

    async def send(self, message: EmailMessage) -> None:
        await asyncio.to_thread(self._send, message)

    def _send(self, message: EmailMessage) -> None:
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
                client.send_message(message)
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            if all(500 <= c < 600 for c in codes):
                raise MailRejected(f"recipient refused ({codes[0]})") from None
            raise MailDeferred(f"recipient deferred ({codes[0]})") from None
        except (smtplib.SMTPAuthenticationError, smtplib.SMTPConnectError, smtplib.SMTPHeloError) as exc:
            # Wrong credentials or a server turning us away: a fault of the setup, not of this
            # message, so keep it for when the setup is fixed rather than drop it as refused.
            raise MailDeferred(f"the SMTP server did not let us send ({exc.smtp_code})") from None
        except smtplib.SMTPResponseException as exc:
            if 500 <= exc.smtp_code < 600:
                raise MailRejected(f"server refused the message ({exc.smtp_code})") from None
            raise MailDeferred(f"server deferred the message ({exc.smtp_code})") from None
        except (OSError, smtplib.SMTPException) as exc:
            raise MailDeferred(f"could not reach the SMTP server: {type(exc).__name__}") from None
