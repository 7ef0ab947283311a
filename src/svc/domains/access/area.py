"""The access area: who the edge lets through to a project's site (public, org members, a password),
the bypass token for CI, and the routes the edge asks."""

from __future__ import annotations

from pathlib import Path

from svc.domains.access import authorize_pages, edge_router, jobs, pages, router
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="access",
    routers=(router.router, edge_router.router),
    pages=(pages.router, authorize_pages.router),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Access", "/access", order=20),),
    jobs=jobs.register,
)
