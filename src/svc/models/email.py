"""Email per project: the grant that fixes a project's address, the mail log (one row per message
in or out), the recipients a project may no longer send to, and the DKIM key of each mail domain."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class EmailGrant(Base):
    """A project receives mail at `address` (any local part) and may send from it. The address is
    fixed at grant: renaming the project does not move it."""

    __tablename__ = "email_grants"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    # The mail domain, lower case, without a local part: `<project>.<org>.<SVC_MAIL_DOMAIN>`.
    address: Mapped[str] = mapped_column(String(253), unique=True)
    granted_at: Mapped[datetime]
    granted_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class MailLogEntry(Base):
    """One message, received or sent. The raw message (with the headers svc added) is in the blob
    store under `raw_key` until the row is pruned (keepDays by plan)."""

    __tablename__ = "mail_log"
    __table_args__ = (
        # The log's pages (newest first, by the cursor) and the hourly cap's count.
        Index("ix_mail_log_project_created", "project_id", "created_at", "id"),
        # A message a sender retried after svc stored it (its answer lost): stored once.
        Index("ux_mail_log_project_dedupe", "project_id", "dedupe_key", unique=True),
        # The provider's notifications find their message by its Message-ID.
        Index("ix_mail_log_message_id", "message_id"),
        # ... or by the id the relay answered with (the provider's own message id).
        Index("ix_mail_log_provider_id", "provider_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    direction: Mapped[str] = mapped_column(String(3))  # MailDirection
    from_addr: Mapped[str] = mapped_column(String(320))
    # Every recipient of the envelope, comma-separated (inbound: those at the project's address).
    to_addr: Mapped[str] = mapped_column(String(2000))
    subject: Mapped[str] = mapped_column(String(400), default="")
    outcome: Mapped[str] = mapped_column(String(20))  # MailOutcome
    size: Mapped[int] = mapped_column(Integer, default=0)
    spf: Mapped[str | None] = mapped_column(String(10))  # SpfResult; inbound only
    raw_key: Mapped[str | None] = mapped_column(String(200))
    # The Message-ID header (without <>), as svc set it on mail it sends or found on mail it received.
    message_id: Mapped[str | None] = mapped_column(String(400))
    # What the relay answered for a sent message (its queue id), and the last failure's words.
    provider_id: Mapped[str | None] = mapped_column(String(400))
    detail: Mapped[str | None] = mapped_column(Text)
    # Inbound: sha256 of the envelope and bytes; outbound: the sender's idempotency, if any.
    dedupe_key: Mapped[str | None] = mapped_column(String(64))
    client_ip: Mapped[str | None] = mapped_column(String(45))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class MailSuppression(Base):
    """A recipient a project's mail bounced at for good, or who complained: not sent to again."""

    __tablename__ = "mail_suppressions"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    recipient: Mapped[str] = mapped_column(String(320), primary_key=True)
    reason: Mapped[str] = mapped_column(String(20))  # bounced | complained
    mail_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime]


class MailDomainKey(Base):
    """The DKIM key svc signs a mail domain's mail with (its private half sealed by svc's keyring),
    published as `<selector>._domainkey.<domain>`."""

    __tablename__ = "mail_domain_keys"

    domain: Mapped[str] = mapped_column(String(253), primary_key=True)
    selector: Mapped[str] = mapped_column(String(63))
    sealed_key: Mapped[bytes] = mapped_column(LargeBinary)
    public_key: Mapped[str] = mapped_column(Text)  # base64 DER, as the DKIM record's p= carries it
    created_at: Mapped[datetime]
