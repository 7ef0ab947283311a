"""The hostnames area: a project's custom hostnames, their proof of ownership and its checks."""

from __future__ import annotations

from pathlib import Path

from svc.domains.hostnames import edge_router, jobs, kinds, pages, router
from svc.domains.hostnames.settings import HostnameSettings
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="hostnames",
    settings=HostnameSettings,
    routers=(router.router, edge_router.router),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Domains", "/hostnames", order=40),),
    jobs=jobs.register, job_kinds=kinds.HostnameJob,
)
