"""SQL for deployments."""

from __future__ import annotations

from sqlalchemy import select

from svc.kit.store_session import StoreSession
from svc.models import Deployment, User


async def page(session: StoreSession, project_id: str, *, limit: int, before: int | None) -> list[Deployment]:
    """Newest first; versions below `before` when given."""
    stmt = select(Deployment).where(Deployment.project_id == project_id)
    if before is not None:
        stmt = stmt.where(Deployment.version < before)
    return list((await session.scalars(stmt.order_by(Deployment.version.desc()).limit(limit))).all())


async def by_version(session: StoreSession, project_id: str, version: int) -> Deployment | None:
    return (await session.scalars(
        select(Deployment).where(Deployment.project_id == project_id, Deployment.version == version))).first()


async def by_id(session: StoreSession, deployment_id: str | None) -> Deployment | None:
    return await session.get(Deployment, deployment_id) if deployment_id else None


async def uploader_subjects(session: StoreSession, rows: list[Deployment]) -> dict[str, str]:
    """User id -> subject, for the `uploader` of each of `rows`, in one query."""
    user_ids = {r.uploader_id for r in rows if r.uploader_id}
    if not user_ids:
        return {}
    result = await session.execute(select(User.id, User.subject).where(User.id.in_(user_ids)))
    return {uid: subject for uid, subject in result.all()}


async def uploader(session: StoreSession, row: Deployment | None) -> User | None:
    return await session.get(User, row.uploader_id) if row is not None and row.uploader_id else None


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
