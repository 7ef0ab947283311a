from __future__ import annotations

from email.message import EmailMessage
from typing import Protocol


class _MailFailure(Exception):
    """Its message names codes and causes only, never addresses or content (it may be logged);
    `said` is the server's own words (they may name an address: for the sender's own log only)."""

    def __init__(self, message: str, said: str = "") -> None:
        super().__init__(message)
        self.said = said


class MailRejected(_MailFailure):
    """The server refused the message for good (5xx): do not retry."""


class MailDeferred(_MailFailure):
    """A temporary failure (4xx, connection refused, timeout): retry later."""


class MailSender(Protocol):
    description: str

    async def send(self, message: EmailMessage) -> None:
        """Return only once the server accepted the message; raise MailRejected or MailDeferred."""
        ...
