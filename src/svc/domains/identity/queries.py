"""SQL for users and their personal orgs."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from svc.models import PersonalOrg, User


async def user_by_identity(session: AsyncSession, provider: str, subject: str) -> User | None:
    return (await session.scalars(
        select(User).where(User.provider == provider, User.subject == subject))).first()


async def has_personal_org(session: AsyncSession, user_id: str) -> bool:
    """Whether the user ever got a personal org (its row outlives the org: never recreated)."""
    return await session.get(PersonalOrg, user_id) is not None
