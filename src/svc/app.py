"""create_app(settings, adapters) -> FastAPI: the control API of every area, its dashboard, and the
serving process's life (svc/running.py: the state store, the areas' lifespans, the components in
their order, the job worker)."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import APIRouter, FastAPI
from starlette.types import Scope

from svc import __version__, components
from svc.areas import AREAS
from svc.context import Adapters
from svc.errors import install_error_handlers
from svc.jobs.registry import JobRegistry
from svc.openapi import install_openapi
from svc.running import read_config, server_context, serving
from svc.settings import Config, OwnSettings, Settings
from svc.supervisor.component import Launch
from svc.web import install_dashboard
from svc.web.guard import RequestGuard

__all__ = ["MAX_JSON_BODY", "build_registry", "create_app", "default_adapters", "is_upload", "read_config",
           "server_context"]

MAX_JSON_BODY = 1024 * 1024


def default_adapters(settings: Settings | Config) -> Adapters:
    """Each component's adapter as the settings make it (svc/components.py)."""
    return components.build_adapters(_config(settings))


def build_registry(settings: Settings | Config) -> JobRegistry:
    """Every area's job kinds and periodic cycles, as its manifest registers them."""
    config = _config(settings)
    registry = JobRegistry()
    for area in AREAS:
        if area.jobs is not None:
            area.jobs(registry, config)
    return registry


def _config(settings: Settings | Config, own: Iterable[OwnSettings] = ()) -> Config:
    """A Config as given, or the shared settings with the parts' own read (but for those in `own`)."""
    return settings if isinstance(settings, Config) else read_config(settings, own)


def is_upload(scope: Scope) -> bool:
    """A request whose body an area bounds itself (a bundle upload)."""
    return any(area.uploads(scope) for area in AREAS if area.uploads is not None)


def _runtime_only(router: APIRouter) -> bool:
    paths = [getattr(route, "path", "") for route in router.routes]
    return bool(paths) and all(path.startswith("/v1/runtime/") for path in paths)


def create_app(settings: Settings | Config, adapters: Adapters | None = None, *, run_workers: bool = True,
               registry: JobRegistry | None = None, run_edge: bool = False, edge_api: str | None = None,
               run_nameserver: bool = False, run_database: bool = False,
               own: Iterable[OwnSettings] = (), freeze_startup: bool = False) -> FastAPI:
    """settings: the shared settings (the parts' own then read from the environment, but for those
    in `own`), or a Config made with read_config. run_edge: start and supervise this process's
    worker runtime (workerd) and edge (nginx) when SVC_EDGE_ENABLED; edge_api is where they reach
    this API (http://host:port; default SVC_PUBLIC_URL). run_nameserver: a private PowerDNS when
    none was handed in or configured and pdns_server is installed. run_database: the projects'
    databases' node (SVC_PROJECT_DB_ADMIN_URL's cluster, else a private one when PostgreSQL is
    installed). freeze_startup: the serving process's
    own (`svc serve`): what start-up made is kept out of the garbage collector's sight (gc.freeze)."""
    # The parts' own settings are read (and checked) now, before anything starts.
    config = _config(settings, own)
    settings = config.settings
    processes = {"workers", "edge"} if run_edge else set()
    processes |= {"nameserver"} if run_nameserver else set()
    processes |= {"database"} if run_database else set()
    launch = Launch(api_url=edge_api or settings.public_url, processes=frozenset(processes))
    lifespan = serving(config, adapters, launch, registry or build_registry(config), run_workers=run_workers,
                       freeze_startup=freeze_startup)
    app = FastAPI(title="svc control API", version=__version__, lifespan=lifespan,
                  openapi_url="/v1/openapi.json", docs_url=None, redoc_url=None)
    install_error_handlers(app)
    install_openapi(app)
    routers = [router for area in AREAS
               for router in (*area.routers, *(area.dev_routers if settings.enable_dev_auth else ()))]
    # The runtime's routes first: they are the hot ones (every env.db query, every worker load) and
    # a request is matched against the routes in order (the last of ~160 cost a tenth of a query).
    for router in sorted(routers, key=lambda r: not _runtime_only(r)):
        app.include_router(router)
    install_dashboard(app, AREAS)
    app.add_middleware(RequestGuard, limit=MAX_JSON_BODY, is_upload=is_upload)
    return app
