"""The projects area: projects of an org, their default hostnames, and what the edge routes."""

from __future__ import annotations

from pathlib import Path

from svc.domains.projects import jobs, pages, router
from svc.manifest import Area, NavLink, OrgHolding
from svc.models import Project
from svc.web.dashboard import Place

AREA = Area(
    name="projects",
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "Projects", "/projects", order=10, at_org_root=True),
         NavLink(Place.project, "Overview", "", order=0),
         NavLink(Place.project, "Settings", "/settings", order=90)),
    hints={
        "op_in_flight": "The project is being deleted; wait until that finishes.",
        "hostname_taken": "A hostname serves one project on this svc: remove it from the other project first, "
                          "or, if another org holds it without proof, prove the name is yours as said above.",
    },
    holdings=(OrgHolding("projects", Project, Project.name),),
    jobs=jobs.register,
)
