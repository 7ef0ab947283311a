"""What the email area asks of the relay: these bytes, from this envelope sender, to these
recipients. The failures are the mail adapter's: MailRejected (5xx: never retried), MailDeferred
(4xx, the relay unreachable: retried)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from svc.adapters.mail.port import MailDeferred, MailRejected

__all__ = ["MailDeferred", "MailRejected", "MailRelay"]


class MailRelay(Protocol):
    description: str

    async def send_raw(self, sender: str, recipients: Sequence[str], raw: bytes) -> str:
        """Return once the relay accepted the message, with its queue id (what its 250 to DATA
        named, else that reply's text); raise MailRejected or MailDeferred."""
        ...
