"""Development sink: each message becomes an .eml file a person can open."""

from __future__ import annotations

import asyncio
import os
from email.message import EmailMessage
from pathlib import Path

from svc.kit.ids import new_id


class EmlDirectorySender:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.description = f"writing outgoing mail as .eml files under {directory}"

    async def send(self, message: EmailMessage) -> None:
        await asyncio.to_thread(self._write, message)

    def _write(self, message: EmailMessage) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{new_id('mail')}.eml"
        tmp = final.with_suffix(".tmp")
        tmp.write_bytes(bytes(message))
        os.replace(tmp, final)
