"""SQL for users and their personal orgs."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from svc.kit.store_session import StoreSession
from svc.kit.tokens import token_hash
from svc.models import PersonalOrg, User, UserSession


async def user_by_identity(session: StoreSession, provider: str, subject: str) -> User | None:
    return (await session.scalars(
        select(User).where(User.provider == provider, User.subject == subject))).first()


async def has_personal_org(session: StoreSession, user_id: str) -> bool:
    """Whether the user ever got a personal org (its row outlives the org: never recreated)."""
    return await session.get(PersonalOrg, user_id) is not None


async def session_expiry(session: StoreSession, token: str) -> datetime | None:
    return await session.scalar(select(UserSession.expires_at).where(UserSession.token_hash == token_hash(token)))
