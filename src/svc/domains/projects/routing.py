"""Transitional: the edge's imports until it reads the store through its RoutingSource port."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from svc.adapters.edge.port import Route
from svc.domains.projects.queries import edge_generation, route_for_host, routing_table
from svc.kit.clock import utcnow
from svc.models import EdgeState

__all__ = ["Route", "bump_edge", "edge_generation", "route_for_host", "routing_table"]


async def bump_edge(session: AsyncSession) -> None:
    await session.execute(update(EdgeState).where(EdgeState.id == 1)
                          .values(generation=EdgeState.generation + 1, changed_at=utcnow()))
