"""The databases area: a project's PostgreSQL database, its credentials and token users, env.db."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from svc.context import AppContext
from svc.domains.databases import generations, jobs, kinds, pages, router, service
from svc.domains.databases.settings import DatabaseSettings
from svc.manifest import Area, NavLink, ProjectResource
from svc.web.dashboard import Place


@contextlib.asynccontextmanager
async def _lifespan(ctx: AppContext) -> AsyncIterator[None]:
    # Dumps a killed process left half-written: never a generation, removed here.
    await asyncio.to_thread(generations.sweep_partials, ctx)
    yield


AREA = Area(
    name="databases",
    routers=(router.router, router.runtime_router),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Database", "/database", order=35),),
    bindings=service.worker_env,
    resource=ProjectResource(name="db", binding="env.db", what="A PostgreSQL database of the project's own",
                             granted=service.database_granted, command="svc db create --project {project}",
                             tab="/database", button="Create the database", off=service.databases_off),
    jobs=jobs.register, job_kinds=kinds.DatabaseJob,
    settings=DatabaseSettings,
    lifespan=_lifespan,
    hints={"no_node_admin": "The server's operator turns project databases on: install PostgreSQL's server "
                            "(make setup) or set SVC_PROJECT_DB_ADMIN_URL, then restart svc.",
           "connection_ceiling": "Delete a token user or close some of the project's connections, then try again; "
                                 "the pro plan has a higher ceiling.",
           "node_full": "The operator of this svc gives the node more connections (SVC_PROJECT_DB_MAX_CONNECTIONS "
                        "for the private cluster) or another node."},
)
