"""Mail's settings: the SMTP server svc's mails go through, and their sender."""

from __future__ import annotations

from svc.settings import ComponentSettings


class MailSettings(ComponentSettings):
    # The SMTP server mail goes through (smtp://user:password@host:port, smtps:// for TLS); unset:
    # each message is written as an .eml file under SVC_DATA_DIR/mail (development).
    smtp_url: str | None = None
    # The sender of svc's mails.
    mail_from: str = "svc <no-reply@localhost>"
