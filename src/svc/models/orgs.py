from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class Org(Base):
    __tablename__ = "orgs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    slug: Mapped[str] = mapped_column(String(32), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    personal: Mapped[bool] = mapped_column(default=False)
    plan: Mapped[str] = mapped_column(String(16), default="free")
    created_at: Mapped[datetime]


class PersonalOrg(Base):
    """Which org is a user's personal one. Outlives the org row so it is never recreated."""

    __tablename__ = "personal_orgs"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    org_id: Mapped[str | None] = mapped_column(ForeignKey("orgs.id", ondelete="SET NULL"))
    created_at: Mapped[datetime]


class Membership(Base):
    __tablename__ = "memberships"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True,
                                         index=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
