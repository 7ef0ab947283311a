"""The inbound SMTP server's settings (docs/email.md, "Inbound")."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from svc.settings import ComponentSettings


class SmtpServerSettings(ComponentSettings):
    # The port svc receives the projects' mail on (the mail domain's MX points here, on port 25
    # in production); 0: no inbound mail. `make run` sets 2525.
    smtp_port: int = Field(default=0, ge=0, le=65535)
    # The address the SMTP server binds.
    smtp_host: str = "127.0.0.1"
    # The name it greets with, writes in its headers and looks its STARTTLS certificate up by;
    # unset: the host the mail domain's MX records name (SVC_MAIL_MX_HOST, else SVC_PUBLIC_URL's).
    smtp_hostname: str | None = None
    # The largest message accepted, in bytes (advertised as SIZE; larger ones are refused with 552).
    smtp_max_message_bytes: int = Field(default=10 * 1024**2, ge=1024)
    # Messages one client IP address may send a minute (a burst of as many); more are refused with
    # 451, so a well-behaved sender retries later.
    smtp_rate_per_ip: int = Field(default=120, ge=1)
    # Messages one project's address may receive a minute (any local part counts), likewise.
    smtp_rate_per_address: int = Field(default=120, ge=1)
    # Sessions one client IP address may hold open at once; another is answered 421 and closed.
    smtp_connections_per_ip: int = Field(default=20, ge=1)
    # A certificate chain (PEM file) for STARTTLS; unset: the edge's certificate for the server's
    # name (or a wildcard above it) when svc holds one, else no STARTTLS.
    smtp_tls_cert: Path | None = None
    # The key of SVC_SMTP_TLS_CERT (PEM file, readable by svc alone); set with it.
    smtp_tls_key: Path | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> SmtpServerSettings:
        if (self.smtp_tls_cert is None) != (self.smtp_tls_key is None):
            raise ValueError("SVC_SMTP_TLS_CERT and SVC_SMTP_TLS_KEY are set together")
        return self
