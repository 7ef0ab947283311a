"""The invites area: invitations to join an org, by email, accepted through a link."""

from __future__ import annotations

from pathlib import Path

from svc.domains.invites import pages, router
from svc.domains.invites.settings import InviteSettings
from svc.manifest import Area, NavLink
from svc.models import Role
from svc.web.dashboard import Place

_NEW_INVITE = "Ask an admin of the org for a new invite."

AREA = Area(
    name="invites",
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "Invites", "/invites", order=40, role=Role.admin),),
    settings=InviteSettings,
    hints={
        "too_many_invites": "Revoke invites that are no longer needed, or wait for some to be accepted.",
        "invite_used": _NEW_INVITE,
        "invite_revoked": _NEW_INVITE,
        "invite_expired": _NEW_INVITE,
    },
)
