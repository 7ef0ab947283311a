"""The audit area: an org's audit trail (who changed what), for its admins."""

from __future__ import annotations

from pathlib import Path

from svc.domains.audit import pages, router
from svc.manifest import Area, NavLink
from svc.models import Role
from svc.web.dashboard import Place

AREA = Area(
    name="audit",
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "Audit log", "/audit", order=60, role=Role.admin),),
)
