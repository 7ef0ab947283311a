"""End-user auth per project (domains/app_auth): the grant with its settings, and the OAuth apps the
project registered at the social providers (their client secrets sealed). The end users, their
identities and sessions are not here: they live in the project's own database (schema svc_auth)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class AuthGrant(Base):
    """The project serves sign-in on its hosts while `revoked_at` is null. A revoke keeps the row
    (its settings and providers come back with a grant again) as it keeps the end users."""

    __tablename__ = "auth_grants"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    session_days: Mapped[int] = mapped_column(Integer, default=30)
    brand_name: Mapped[str | None] = mapped_column(String(100))
    brand_color: Mapped[str | None] = mapped_column(String(7))
    logo_url: Mapped[str | None] = mapped_column(String(2048))
    # The version of the svc_auth schema svc last migrated the project's database to.
    schema_version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    granted_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    revoked_at: Mapped[datetime | None]


class AuthProvider(Base):
    """One OAuth app of the project at a social provider (name: AuthProviderName). The client
    secret is sealed with svc's keyring bound to the project and provider: never returned."""

    __tablename__ = "auth_providers"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(16), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(500))
    sealed_secret: Mapped[bytes] = mapped_column(LargeBinary)
    updated_at: Mapped[datetime]
