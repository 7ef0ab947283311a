"""SQL for projects, their hostnames, and what the edge routes (the routing table and its counter)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Select, delete, func, or_, select, update

from svc.adapters.edge.port import Route
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import (
    AccessToken,
    Deployment,
    EdgeState,
    Hostname,
    HostnameKind,
    HostnameStatus,
    Org,
    Project,
    ProjectState,
    User,
)


async def of_org_with_hosts(session: StoreSession, org_id: str) -> list[tuple[Project, str]]:
    """The org's projects by name, each with its default hostname, in one query."""
    rows = await session.execute(
        select(Project, Hostname.host)
        .join(Hostname, (Hostname.project_id == Project.id) & (Hostname.kind == HostnameKind.default))
        .where(Project.org_id == org_id).order_by(Project.name))
    return [(project, host) for project, host in rows.all()]


SummaryRow = Row[str, str, str, datetime, int, datetime]  # version and time are None without a live deployment


async def summaries_of_org(session: StoreSession, org_id: str) -> Sequence[SummaryRow]:
    """(name, state, default host, created, live version, live since) of the org's projects by name,
    in one query of plain columns (the dashboard's project list: no ORM objects to build)."""
    rows = await session.execute(
        select(Project.name, Project.state, Hostname.host, Project.created_at, Deployment.version,
               Deployment.created_at)
        .join(Hostname, (Hostname.project_id == Project.id) & (Hostname.kind == HostnameKind.default))
        .outerjoin(Deployment, Deployment.id == Project.live_deployment_id)
        .where(Project.org_id == org_id).order_by(Project.name))
    return rows.all()


async def count_in_org(session: StoreSession, org_id: str) -> int:
    return int(await session.scalar(select(func.count()).select_from(Project).where(Project.org_id == org_id)) or 0)


async def hostname(session: StoreSession, host: str) -> Hostname | None:
    return await session.get(Hostname, host)


async def hostnames_of(session: StoreSession, project_id: str) -> list[Hostname]:
    return list((await session.scalars(
        select(Hostname).where(Hostname.project_id == project_id)
        .order_by(Hostname.kind, Hostname.host))).all())


async def default_hostname(session: StoreSession, project_id: str) -> str:
    host = await session.scalar(
        select(Hostname.host).where(Hostname.project_id == project_id, Hostname.kind == HostnameKind.default))
    return host or ""


async def delete_project(session: StoreSession, project_id: str) -> None:
    """The row; its deployments, hostnames and secrets follow by foreign-key cascade. The access
    tokens limited to it are deleted by statement, not by the cascade: the credential cache sees a
    write to their table (auth/invalidation.py) and forgets them at once."""
    await session.execute(delete(AccessToken).where(AccessToken.project_id == project_id))
    await session.execute(delete(Project).where(Project.id == project_id)
                          .execution_options(synchronize_session=False))


def _routes() -> Select[*tuple[str, str, str, str, str, str | None, str, int, str, str | None,
                               dict[str, Any] | None, int]]:
    return (
        select(Hostname.host, Project.id, Project.name, Org.id, Org.slug, Deployment.digest, Project.access_mode,
               Project.access_generation, Hostname.status, Deployment.id, Deployment.worker,
               Project.bindings_generation)
        .join(Project, Project.id == Hostname.project_id)
        .join(Org, Org.id == Project.org_id)
        .outerjoin(Deployment, Deployment.id == Project.live_deployment_id)
        .where(Project.state == ProjectState.active))


def _route(row: Row[str, str, str, str, str, str | None, str, int, str, str | None, dict[str, Any] | None,
                    int]) -> Route:
    (host, project_id, project_name, org_id, org_slug, digest, access_mode, access_generation, status,
     deployment_id, worker, bindings_generation) = row
    return Route(host=host, project_id=project_id, project_name=project_name, org_id=org_id, org_slug=org_slug,
                 digest=digest, access_mode=access_mode, access_generation=access_generation,
                 pending=status != HostnameStatus.active,
                 worker_key=f"{deployment_id}.{bindings_generation}" if worker else None,
                 worker_assets=worker["assets"] if worker else "files-first")


async def routing_table(session: StoreSession, *, project_ids: Collection[str] | None = None,
                        hosts: Collection[str] = ()) -> list[Route]:
    """Every host the edge answers for: active hostnames of active projects, with the live
    deployment's digest, and pending custom hostnames (pending=True: the edge answers them with the
    page naming the record their owner has yet to create, never with the project's content).
    With `project_ids`: only the hosts of those projects, and `hosts` (whichever project has them)."""
    stmt = _routes().where(Hostname.status.in_([HostnameStatus.active, HostnameStatus.pending_dns]))
    if project_ids is not None:
        stmt = stmt.where(or_(Hostname.project_id.in_(list(project_ids)), Hostname.host.in_(list(hosts))))
    rows = await session.execute(stmt.order_by(Hostname.host))
    return [_route(row) for row in rows.all()]


async def route_for_host(session: StoreSession, host: str) -> Route | None:
    """The route of a host svc serves (active hostnames only)."""
    row = (await session.execute(_routes().where(Hostname.host == host,
                                                 Hostname.status == HostnameStatus.active))).first()
    return _route(row) if row else None


async def deployments_page(session: StoreSession, project_id: str, *, limit: int,
                           before: int | None) -> list[Deployment]:
    """Newest first; versions below `before` when given."""
    stmt = select(Deployment).where(Deployment.project_id == project_id)
    if before is not None:
        stmt = stmt.where(Deployment.version < before)
    return list((await session.scalars(stmt.order_by(Deployment.version.desc()).limit(limit))).all())


async def deployment_by_id(session: StoreSession, deployment_id: str | None) -> Deployment | None:
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


async def bump_edge_generation(session: StoreSession) -> int:
    """Move the routing table's counter; returns the value this transaction set."""
    return int((await session.execute(
        update(EdgeState).where(EdgeState.id == 1)
        .values(generation=EdgeState.generation + 1, changed_at=utcnow())
        .returning(EdgeState.generation)
        .execution_options(synchronize_session=False))).scalar_one())


async def bump_bindings_generation(session: StoreSession, project_id: str) -> None:
    await session.execute(update(Project).where(Project.id == project_id)
                          .values(bindings_generation=Project.bindings_generation + 1)
                          .execution_options(synchronize_session=False))


async def edge_generation(session: StoreSession) -> int:
    return int(await session.scalar(select(EdgeState.generation).where(EdgeState.id == 1)) or 0)
