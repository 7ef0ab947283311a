"""SQL for secrets."""

from __future__ import annotations

from sqlalchemy import func, select

from svc.db import lock_rows
from svc.kit.store_session import StoreSession
from svc.models import Project, Secret


async def lock_project(session: StoreSession, project_id: str) -> None:
    """Serialise secret changes of one project. PostgreSQL: a row lock; SQLite: write transactions
    are already serial (BEGIN IMMEDIATE)."""
    await lock_rows(session, select(Project.id).where(Project.id == project_id))


async def of_project(session: StoreSession, project_id: str) -> list[Secret]:
    return list((await session.scalars(
        select(Secret).where(Secret.project_id == project_id).order_by(Secret.name))).all())


async def one(session: StoreSession, project_id: str, name: str) -> Secret | None:
    return await session.get(Secret, (project_id, name))


async def count(session: StoreSession, project_id: str) -> int:
    return int(await session.scalar(
        select(func.count()).select_from(Secret).where(Secret.project_id == project_id)) or 0)
