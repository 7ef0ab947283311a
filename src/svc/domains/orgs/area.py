"""The orgs area: orgs, their members and roles, the plan's limits; the dashboard's front door and
org switcher."""

from __future__ import annotations

from pathlib import Path

from svc.domains.orgs import admin, pages, router
from svc.domains.orgs.settings import PlanSettings
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="orgs",
    admin=admin.commands,
    settings=PlanSettings,
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "Members", "/members", order=30),
         NavLink(Place.org, "Org settings", "/settings", order=90),
         NavLink(Place.account, "New org", "/orgs/new", order=10)),
    frame=pages.org_switcher,
    hints={
        "org_not_empty": "Delete what the org still holds first; it is listed below.",
        "personal_org": "Your personal org stays as long as your account does.",
        "last_admin": "Make another member an admin first.",
        "already_member": "Change a member's role on the Members page instead.",
    },
)
