"""A project's database (the grant), its token users and its generations (backups)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class ProjectDatabase(Base):
    """The grant: the project has a database on the node. Its password is sealed (the keyring,
    bound to the project) and never rotated; /connect is the one route that unseals it."""

    __tablename__ = "project_databases"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    sealed_password: Mapped[bytes]
    created_at: Mapped[datetime]
    created_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # The generations' epoch: 1, then one more after each restore (decisions.md).
    epoch: Mapped[int] = mapped_column(default=1)
    # What the last hourly check saw of the database (its change marker), and when it ran.
    change_marker: Mapped[str | None] = mapped_column(String(200))
    last_checked_at: Mapped[datetime | None]


class DatabaseToken(Base):
    """A token user: its own login role on the node (a member of the project's role) until
    `expires_at`. svc keeps no password and no verifier of it."""

    __tablename__ = "database_tokens"

    user: Mapped[str] = mapped_column(String(63), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    created_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class DatabaseGeneration(Base):
    """A generation: a pg_dump archive of a project's database in the blob store. Not a foreign
    key to the project: the final safety generation outlives the database (and the listing of a
    deleted database needs none)."""

    __tablename__ = "database_generations"
    __table_args__ = (UniqueConstraint("project_id", "epoch", "seq", "kind"),
                      Index("ix_database_generations_project_created", "project_id", "created_at"))

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(40))
    epoch: Mapped[int]
    seq: Mapped[int]
    # scheduled | pre_restore | final | export (an export is a diagnostic image: never listed as a
    # generation, never selected by restore, never pruned; its seq counts exports only)
    kind: Mapped[str] = mapped_column(String(16))
    blob_key: Mapped[str] = mapped_column(String(300))
    bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    # Rows per table when the dump was taken ({"public.notes": 3}): what verification compares.
    row_counts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # None until the verification job ran; then whether a scratch restore matched.
    verified: Mapped[bool | None]
    restore_seconds: Mapped[float | None]
    verify_error: Mapped[str | None] = mapped_column(Text)
