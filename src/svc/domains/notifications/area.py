"""The notifications area: what an org's members are told (a plan limit reached), in the dashboard and by mail."""

from __future__ import annotations

from pathlib import Path

from svc.domains.notifications import pages, router
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="notifications",
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "Notifications", "/notifications", order=50),),
)
