"""Object storage per project: the grant that fixes a project's prefix in the object store and
keeps what it uses, and the writes in flight that hold part of its quota (domains/storage)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class StorageGrant(Base):
    """A project's objects live under `prefix` (`p/{projectId}/`, fixed at the first grant, never
    changed). A revoke keeps the row (`revoked_at`) as it keeps the objects: a grant again finds
    the same prefix and what the objects use."""

    __tablename__ = "storage_grants"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    prefix: Mapped[str] = mapped_column(String(100))
    # What the usage cycle last counted in the store, plus svc's own writes and deletes since.
    used_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    # When the usage cycle last counted the prefix (None: never yet).
    reported_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    granted_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    revoked_at: Mapped[datetime | None]


class StorageReservation(Base):
    """A write in flight: its declared length held from the project's quota from before the upload
    until it settles. One a crashed process left is released by the usage cycle after a while."""

    __tablename__ = "storage_reservations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    bytes: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(index=True)
