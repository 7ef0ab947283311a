"""SQL for project databases."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, select

from svc.db import lock_rows
from svc.kit.store_session import StoreSession
from svc.models import DatabaseToken, Project, ProjectDatabase


async def lock_project(session: StoreSession, project_id: str) -> None:
    await lock_rows(session, select(Project.id).where(Project.id == project_id))


async def grant(session: StoreSession, project_id: str) -> ProjectDatabase | None:
    return await session.get(ProjectDatabase, project_id)


async def tokens(session: StoreSession, project_id: str, *, now: datetime) -> list[DatabaseToken]:
    """The project's token users that can still log in, newest first."""
    return list((await session.scalars(
        select(DatabaseToken).where(DatabaseToken.project_id == project_id, DatabaseToken.expires_at > now)
        .order_by(DatabaseToken.created_at.desc(), DatabaseToken.user))).all())


async def expired_tokens(session: StoreSession, project_id: str, *, now: datetime) -> list[str]:
    return list((await session.scalars(
        select(DatabaseToken.user).where(DatabaseToken.project_id == project_id,
                                         DatabaseToken.expires_at <= now))).all())


async def token(session: StoreSession, project_id: str, user: str) -> DatabaseToken | None:
    row = await session.get(DatabaseToken, user)
    return row if row is not None and row.project_id == project_id else None


async def count_tokens(session: StoreSession, project_id: str, *, now: datetime) -> int:
    return int(await session.scalar(
        select(func.count()).select_from(DatabaseToken)
        .where(DatabaseToken.project_id == project_id, DatabaseToken.expires_at > now)) or 0)


async def delete_tokens(session: StoreSession, users: list[str]) -> None:
    if users:
        await session.execute(delete(DatabaseToken).where(DatabaseToken.user.in_(users)))
