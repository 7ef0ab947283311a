"""The workers area: a deployment's worker/ run by the worker runtime (workerd) with its bindings,
and its logs (docs/workers.md); the deployments area checks a bundle's worker before it goes live."""

from __future__ import annotations

from pathlib import Path

from svc.domains.workers import jobs, kinds, pages, router, runtime_router
from svc.domains.workers.settings import WorkerSettings
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="workers",
    routers=(router.router, runtime_router.router),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Logs", "/logs", order=15),),
    jobs=jobs.register, job_kinds=kinds.WorkerJob,
    settings=WorkerSettings,
)
