from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class OutboundMail(Base):
    """Mail written in the same transaction as the change that needs it; its `mail.send` job delivers it."""

    __tablename__ = "outbound_mail"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    to_addr: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(400))
    body: Mapped[str] = mapped_column(Text)
    invite_id: Mapped[str | None] = mapped_column(ForeignKey("invites.id", ondelete="CASCADE"), index=True)
    notification_id: Mapped[str | None] = mapped_column(
        ForeignKey("notifications.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]
    # Refused for good (a 5xx from the server, or attempts exhausted).
    failed_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(String(1000))
