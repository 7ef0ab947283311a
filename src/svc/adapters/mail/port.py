from __future__ import annotations

from email.message import EmailMessage
from typing import Protocol


class MailRejected(Exception):
    """The server refused the message for good (5xx): do not retry."""


class MailDeferred(Exception):
    """A temporary failure (4xx, connection refused, timeout): retry later."""


class MailSender(Protocol):
    description: str

    async def send(self, message: EmailMessage) -> None:
        """Return only once the server accepted the message; raise MailRejected or MailDeferred."""
        ...
