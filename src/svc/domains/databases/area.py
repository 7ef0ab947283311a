"""The databases area: a project's PostgreSQL database, its credentials and token users, env.db."""

from __future__ import annotations

from pathlib import Path

from svc.domains.databases import pages, router, service
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="databases",
    routers=(router.router, router.runtime_router),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Database", "/database", order=35),),
    bindings=service.worker_env,
    hints={"no_node_admin": "The server's operator turns project databases on: install PostgreSQL's server "
                            "(make setup) or set SVC_PROJECT_DB_ADMIN_URL, then restart svc."},
)
