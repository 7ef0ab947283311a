"""What the edge serves, read from the state store (the desired state), and the counter that
tells every svc process's edge to converge again. The edge reads these through its port
(svc.adapters.edge.port.RoutingSource), wired in svc.app."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Select, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from svc.kit.clock import utcnow
from svc.models import Deployment, EdgeState, Hostname, HostnameStatus, Org, Project, ProjectState
from svc.uow import UnitOfWork


@dataclass(frozen=True)
class Route:
    host: str
    project_id: str
    project_name: str
    org_id: str
    org_slug: str
    # None while the project has no deployment.
    digest: str | None
    access_mode: str
    access_generation: int


def _routes() -> Select[*tuple[str, str, str, str, str, str | None, str, int]]:
    return (
        select(Hostname.host, Project.id, Project.name, Org.id, Org.slug, Deployment.digest, Project.access_mode,
               Project.access_generation)
        .join(Project, Project.id == Hostname.project_id)
        .join(Org, Org.id == Project.org_id)
        .outerjoin(Deployment, Deployment.id == Project.live_deployment_id)
        .where(Hostname.status == HostnameStatus.active, Project.state == ProjectState.active))


async def routing_table(session: AsyncSession) -> list[Route]:
    """Every routed host: active hostnames of active projects, with the live deployment's digest."""
    rows = await session.execute(_routes().order_by(Hostname.host))
    return [Route(*row) for row in rows.all()]


async def route_for_host(session: AsyncSession, host: str) -> Route | None:
    row = (await session.execute(_routes().where(Hostname.host == host))).first()
    return Route(*row) if row else None


async def edge_changed(uow: UnitOfWork) -> None:
    """Call in the unit of work of every change the edge must follow (deploy, rollback, policy,
    hostname, teardown). The counter moves in the same transaction, so every svc process's edge
    converges to it on its next poll; this process's edge converges once it is committed, before
    the answer, so a 2xx means "live here"."""
    await bump_edge(uow.session)
    edge = uow.ctx.edge
    if edge is not None:
        uow.after_commit(edge.converge_now)


async def bump_edge(session: AsyncSession) -> None:
    """The SQL of edge_changed: move the counter every svc process's edge polls."""
    await session.execute(update(EdgeState).where(EdgeState.id == 1)
                          .values(generation=EdgeState.generation + 1, changed_at=utcnow())
                          .execution_options(synchronize_session=False))


async def edge_generation(session: AsyncSession) -> int:
    return int(await session.scalar(select(EdgeState.generation).where(EdgeState.id == 1)) or 0)
