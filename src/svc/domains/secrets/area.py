"""The secrets area: a project's secrets, sealed at rest, never shown again."""

from __future__ import annotations

from pathlib import Path

from svc.domains.secrets import pages, router, service
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="secrets",
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Secrets", "/secrets", order=30),),
    bindings=service.worker_env,
)
