"""SQL for projects and their hostnames."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from svc.db import is_postgres
from svc.models import Deployment, Hostname, Operation, Project, User


async def by_name(session: AsyncSession, org_id: str, name: str, *, lock: bool = False) -> Project | None:
    stmt = select(Project).where(Project.org_id == org_id, Project.name == name)
    if lock and is_postgres(session):
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt)).first()


async def of_org(session: AsyncSession, org_id: str) -> list[Project]:
    return list((await session.scalars(
        select(Project).where(Project.org_id == org_id).order_by(Project.name))).all())


async def count_in_org(session: AsyncSession, org_id: str) -> int:
    return int(await session.scalar(select(func.count()).select_from(Project).where(Project.org_id == org_id)) or 0)


async def names_in_org(session: AsyncSession, org_id: str, limit: int) -> list[str]:
    return list((await session.scalars(
        select(Project.name).where(Project.org_id == org_id).order_by(Project.name).limit(limit))).all())


async def hostname(session: AsyncSession, host: str) -> Hostname | None:
    return await session.get(Hostname, host)


async def hostnames_of(session: AsyncSession, project_id: str) -> list[Hostname]:
    return list((await session.scalars(
        select(Hostname).where(Hostname.project_id == project_id)
        .order_by(Hostname.kind, Hostname.host))).all())


async def default_hostname(session: AsyncSession, project_id: str) -> str:
    host = await session.scalar(
        select(Hostname.host).where(Hostname.project_id == project_id, Hostname.kind == "default"))
    return host or ""


async def deployment(session: AsyncSession, deployment_id: str | None) -> Deployment | None:
    return await session.get(Deployment, deployment_id) if deployment_id else None


async def recent_deployments(session: AsyncSession, project_id: str, limit: int) -> list[Deployment]:
    return list((await session.scalars(
        select(Deployment).where(Deployment.project_id == project_id)
        .order_by(Deployment.version.desc()).limit(limit))).all())


async def user(session: AsyncSession, user_id: str | None) -> User | None:
    return await session.get(User, user_id) if user_id else None


async def uploaders(session: AsyncSession, user_ids: set[str]) -> dict[str, str]:
    if not user_ids:
        return {}
    rows = await session.execute(select(User.id, User.subject).where(User.id.in_(user_ids)))
    return {uid: subject for uid, subject in rows.all()}


async def running_operation(session: AsyncSession, project_id: str) -> Operation | None:
    return (await session.scalars(select(Operation).where(Operation.running_key == project_id))).first()
