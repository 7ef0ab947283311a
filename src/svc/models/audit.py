from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class AuditEvent(Base):
    """Outlives what it describes: the org reference is cleared on delete, the slug stays."""

    __tablename__ = "audit_events"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    at: Mapped[datetime] = mapped_column(index=True)
    action: Mapped[str] = mapped_column(String(64), index=True)
    actor_user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor_subject: Mapped[str | None] = mapped_column(String(200))
    org_id: Mapped[str | None] = mapped_column(ForeignKey("orgs.id", ondelete="SET NULL"), index=True)
    org_slug: Mapped[str | None] = mapped_column(String(32), index=True)
    target: Mapped[str | None] = mapped_column(String(400))
    data: Mapped[dict[str, Any]]
