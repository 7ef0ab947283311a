"""SQL for access tokens and SSH keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, or_, select

from svc.db import lock_rows
from svc.kit.store_session import StoreSession
from svc.models import AccessToken, SSHKey, User


async def lock_user(session: StoreSession, user_id: str) -> None:
    """Serialise per-user cap checks. PostgreSQL: a row lock; SQLite: write transactions are
    already serial (BEGIN IMMEDIATE)."""
    await lock_rows(session, select(User.id).where(User.id == user_id))


async def tokens_of(session: StoreSession, user_id: str) -> list[AccessToken]:
    rows = await session.scalars(
        select(AccessToken).where(AccessToken.user_id == user_id)
        .order_by(AccessToken.created_at, AccessToken.id))
    return list(rows.all())


async def token_of(session: StoreSession, user_id: str, token_id: str) -> AccessToken | None:
    return (await session.scalars(
        select(AccessToken).where(AccessToken.id == token_id, AccessToken.user_id == user_id))).first()


async def active_token_count(session: StoreSession, user_id: str, now: datetime) -> int:
    return int(await session.scalar(
        select(func.count()).select_from(AccessToken)
        .where(AccessToken.user_id == user_id, AccessToken.revoked_at.is_(None),
               or_(AccessToken.expires_at.is_(None), AccessToken.expires_at > now))) or 0)


async def keys_of(session: StoreSession, user_id: str) -> list[SSHKey]:
    rows = await session.scalars(
        select(SSHKey).where(SSHKey.user_id == user_id).order_by(SSHKey.created_at, SSHKey.id))
    return list(rows.all())


async def key_of(session: StoreSession, user_id: str, key_id: str) -> SSHKey | None:
    return (await session.scalars(
        select(SSHKey).where(SSHKey.id == key_id, SSHKey.user_id == user_id))).first()


async def key_by_fingerprint(session: StoreSession, fingerprint: str) -> SSHKey | None:
    return (await session.scalars(select(SSHKey).where(SSHKey.fingerprint == fingerprint))).first()


async def key_count(session: StoreSession, user_id: str) -> int:
    return int(await session.scalar(
        select(func.count()).select_from(SSHKey).where(SSHKey.user_id == user_id)) or 0)
