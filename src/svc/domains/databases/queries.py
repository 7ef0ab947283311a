"""SQL for project databases."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select

from svc.db import lock_rows
from svc.kit.store_session import StoreSession
from svc.models import DatabaseGeneration, DatabaseToken, Org, Project, ProjectDatabase


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


async def token_users(session: StoreSession, project_id: str) -> list[str]:
    return list((await session.scalars(select(DatabaseToken.user).where(DatabaseToken.project_id == project_id))).all())


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


async def all_grants(session: StoreSession) -> list[ProjectDatabase]:
    return list((await session.scalars(select(ProjectDatabase).order_by(ProjectDatabase.project_id))).all())


async def plans(session: StoreSession) -> dict[str, str]:
    """Each project with a database: its org's plan."""
    rows = await session.execute(select(ProjectDatabase.project_id, Org.plan)
                                 .join(Project, Project.id == ProjectDatabase.project_id)
                                 .join(Org, Org.id == Project.org_id))
    return {str(r[0]): str(r[1]) for r in rows}


async def generations(session: StoreSession, project_id: str, kinds: Sequence[str]) -> list[DatabaseGeneration]:
    """Newest first."""
    return list((await session.scalars(
        select(DatabaseGeneration).where(DatabaseGeneration.project_id == project_id,
                                         DatabaseGeneration.kind.in_(kinds))
        .order_by(DatabaseGeneration.epoch.desc(), DatabaseGeneration.seq.desc()))).all())


async def generations_of(session: StoreSession, project_ids: Sequence[str], kinds: Sequence[str]) -> \
        list[DatabaseGeneration]:
    return list((await session.scalars(
        select(DatabaseGeneration).where(DatabaseGeneration.project_id.in_(project_ids),
                                         DatabaseGeneration.kind.in_(kinds)))).all())


async def generation(session: StoreSession, generation_id: str) -> DatabaseGeneration | None:
    return await session.get(DatabaseGeneration, generation_id)


async def generation_at(session: StoreSession, project_id: str, epoch: int, seq: int,
                        kinds: Sequence[str]) -> DatabaseGeneration | None:
    return (await session.scalars(select(DatabaseGeneration).where(
        DatabaseGeneration.project_id == project_id, DatabaseGeneration.epoch == epoch,
        DatabaseGeneration.seq == seq, DatabaseGeneration.kind.in_(kinds)))).first()


async def next_seq(session: StoreSession, project_id: str, epoch: int, kinds: Sequence[str]) -> int:
    top = await session.scalar(select(func.max(DatabaseGeneration.seq)).where(
        DatabaseGeneration.project_id == project_id, DatabaseGeneration.epoch == epoch,
        DatabaseGeneration.kind.in_(kinds)))
    return int(top or 0) + 1


async def delete_generations(session: StoreSession, ids: Sequence[str]) -> None:
    if ids:
        await session.execute(delete(DatabaseGeneration).where(DatabaseGeneration.id.in_(ids)))
