"""Development sink: each message becomes an .eml file a person can open."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path

from svc.kit.ids import new_id


class EmlDirectorySender:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.description = f"writing outgoing mail as .eml files under {directory}"

    async def send(self, message: EmailMessage) -> None:
        await asyncio.to_thread(self._write, bytes(message))

    async def send_raw(self, sender: str, recipients: Sequence[str], raw: bytes) -> str:
        """The message as it would go to a relay, with its envelope in the X-Envelope-* headers a
        reader of the file sees first; returns the file's name (the "queue id")."""
        envelope = f"X-Envelope-From: <{sender}>\r\nX-Envelope-To: {', '.join(recipients)}\r\n".encode()
        return await asyncio.to_thread(self._write, envelope + raw)

    def _write(self, data: bytes) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{new_id('mail')}.eml"
        tmp = final.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, final)
        return final.name
