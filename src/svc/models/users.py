from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class User(Base):
    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("provider", "subject"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(String(200))
    email: Mapped[str | None] = mapped_column(String(320))
    name: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime]
    last_login_at: Mapped[datetime]


class UserSession(Base):
    """A sign-in session; only the token's hash is kept."""

    __tablename__ = "user_sessions"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class AccessToken(Base):
    """A personal access token (svc_pat_...); only its hash is kept, revocation keeps the row."""

    __tablename__ = "access_tokens"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The first characters after the prefix, so a person can tell tokens apart in a list.
    hint: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    # A token for a machine (a CI system): limited to one project (CASCADE: the token goes with the
    # project, never widening to every project) and/or to reading (clone and fetch, API reads).
    project_id: Mapped[str | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    read_only: Mapped[bool] = mapped_column(default=False)


class SSHKey(Base):
    __tablename__ = "ssh_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    key_type: Mapped[str] = mapped_column(String(40))
    bits: Mapped[int]
    public_key: Mapped[str] = mapped_column(String(16384))
    fingerprint: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime]


class LoginState(Base):
    """One identity-provider login in flight: state bound to the client's redirect, single use."""

    __tablename__ = "login_states"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    redirect: Mapped[str] = mapped_column(String(2048))
    code_verifier: Mapped[str] = mapped_column(String(128))
    nonce: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
