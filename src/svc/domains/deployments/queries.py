"""SQL for deployments."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from svc.models import Deployment, User


async def page(session: AsyncSession, project_id: str, *, limit: int, before: int | None) -> list[Deployment]:
    """Newest first; versions below `before` when given."""
    stmt = select(Deployment).where(Deployment.project_id == project_id)
    if before is not None:
        stmt = stmt.where(Deployment.version < before)
    return list((await session.scalars(stmt.order_by(Deployment.version.desc()).limit(limit))).all())


async def by_version(session: AsyncSession, project_id: str, version: int) -> Deployment | None:
    return (await session.scalars(
        select(Deployment).where(Deployment.project_id == project_id, Deployment.version == version))).first()


async def by_id(session: AsyncSession, deployment_id: str | None) -> Deployment | None:
    return await session.get(Deployment, deployment_id) if deployment_id else None


async def subjects(session: AsyncSession, user_ids: set[str]) -> dict[str, str]:
    """User id -> subject, for the `uploader` of each deployment."""
    if not user_ids:
        return {}
    rows = await session.execute(select(User.id, User.subject).where(User.id.in_(user_ids)))
    return {uid: subject for uid, subject in rows.all()}
