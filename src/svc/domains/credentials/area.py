"""The credentials area: a person's personal access tokens and SSH keys."""

from __future__ import annotations

from pathlib import Path

from svc.domains.credentials import pages, router
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="credentials",
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.account, "Access tokens", "/account/tokens", order=20),
         NavLink(Place.account, "SSH keys", "/account/ssh-keys", order=30)),
)
