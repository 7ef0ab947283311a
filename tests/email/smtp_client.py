"""A sender for the inbound tests: smtplib (blocking) in a thread, as a mail server elsewhere would
send to svc's SMTP server, which runs on the test's event loop."""

from __future__ import annotations

import asyncio
import email.policy
import smtplib
from dataclasses import dataclass
from email.message import EmailMessage

HELO = "sender.example"


def message(*, sender: str, to: str, subject: str = "Hello", body: str = "Hi there.\n",
            message_id: str | None = "<m1@sender.example>") -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    if message_id:
        msg["Message-ID"] = message_id
    msg.set_content(body)
    return msg.as_bytes(policy=email.policy.SMTP)  # CRLF line ends, as on the wire


@dataclass(frozen=True)
class Answer:
    """What the server answered: 250 for the message, or the refusal's code and the stage."""

    code: int
    stage: str  # "data" (accepted or refused at the end of DATA), "mail", "rcpt"
    refused: dict[str, tuple[int, bytes]]  # recipients refused while others were taken


def _send(port: int, mail_from: str, rcpts: list[str], data: bytes, size_option: bool) -> Answer:
    with smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=60) as smtp:
        if size_option:
            try:
                refused = smtp.sendmail(mail_from, rcpts, data)
            except smtplib.SMTPSenderRefused as exc:
                return Answer(exc.smtp_code, "mail", {})
            except smtplib.SMTPRecipientsRefused as exc:
                codes = {code for code, _ in exc.recipients.values()}
                return Answer(min(codes), "rcpt", dict(exc.recipients))
            except smtplib.SMTPDataError as exc:
                return Answer(exc.smtp_code, "data", {})
            return Answer(250, "data", dict(refused))
        # Without the SIZE option: the server finds the size out while the data come in.
        smtp.ehlo()
        code, _ = smtp.mail(mail_from)
        if code != 250:
            return Answer(code, "mail", {})
        for rcpt in rcpts:
            code, _ = smtp.rcpt(rcpt)
            if code != 250:
                return Answer(code, "rcpt", {})
        code, _ = smtp.data(data)
        return Answer(code, "data", {})


async def send(port: int, mail_from: str, rcpts: list[str], data: bytes, *, size_option: bool = True) -> Answer:
    return await asyncio.to_thread(_send, port, mail_from, rcpts, data, size_option)


def _ehlo(port: int) -> tuple[list[str], int]:
    with smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=60) as smtp:
        smtp.ehlo()
        features = list(smtp.esmtp_features)
        code, _ = smtp.docmd("AUTH", "PLAIN AGFsaWNlAHNlY3JldA==")
        return features, code


async def ehlo(port: int) -> tuple[list[str], int]:
    """The EHLO extensions the server offers, and its answer to an AUTH anyway."""
    return await asyncio.to_thread(_ehlo, port)
