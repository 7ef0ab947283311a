"""The identity area: who people are (sign-in by dev login or an identity provider, sessions, /v1/me)."""

from __future__ import annotations

from pathlib import Path

from svc.domains.identity import idp_router, pages, router
from svc.domains.identity.settings import IdentitySettings
from svc.manifest import Area

AREA = Area(
    name="identity",
    settings=IdentitySettings,
    routers=(router.router, idp_router.router),
    dev_routers=(router.dev_router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
)
