"""SQL for deployments."""

from __future__ import annotations

from sqlalchemy import select

from svc.kit.store_session import StoreSession
from svc.models import Deployment


async def by_version(session: StoreSession, project_id: str, version: int) -> Deployment | None:
    return (await session.scalars(
        select(Deployment).where(Deployment.project_id == project_id, Deployment.version == version))).first()


async def by_id(session: StoreSession, deployment_id: str | None) -> Deployment | None:
    return await session.get(Deployment, deployment_id) if deployment_id else None


async def digest_used(session: StoreSession, digest: str, *, besides: str | None = None) -> bool:
    """Whether any committed deployment (of a project other than `besides`) has this artifact."""
    stmt = select(Deployment.id).where(Deployment.digest == digest)
    if besides is not None:
        stmt = stmt.where(Deployment.project_id != besides)
    return await session.scalar(stmt.limit(1)) is not None


async def unshared_digests(session: StoreSession, project_id: str) -> list[str]:
    """The project's artifacts that no other project's deployment uses."""
    mine = select(Deployment.digest).where(Deployment.project_id == project_id).distinct()
    elsewhere = select(Deployment.digest).where(Deployment.project_id != project_id)
    rows = await session.scalars(mine.where(Deployment.digest.not_in(elsewhere)).order_by(Deployment.digest))
    return list(rows.all())
