"""The relay's settings."""

from __future__ import annotations

from pydantic import field_validator

from svc.settings import ComponentSettings


class RelaySettings(ComponentSettings):
    # The SMTP relay the projects' mail (env.email, POST .../email/send) goes out through:
    # smtp://user:password@host:port (STARTTLS when offered), smtps:// for TLS from the start.
    # Unset: each message is written as an .eml file under SVC_DATA_DIR/mail-out (development).
    smtp_relay_url: str | None = None

    @field_validator("smtp_relay_url")
    @classmethod
    def _an_smtp_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not value.startswith(("smtp://", "smtps://")):
            raise ValueError("must start with smtp:// or smtps://")
        return value
