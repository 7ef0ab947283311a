"""Invites: an org's invites for its admins (create, send again, revoke) and the invite link's page
(`/invites/{token}`, where the invite mail points), which anyone holding the link may open and a
signed-in person accepts.

Created invites show their link once, in the answer to the form (as the API and `svc invites
create` do), beside the mail that is queued with it: never in a flash, a log or another URL. The
link's page is sent with `Referrer-Policy: no-referrer`, so its address (the token) does not leave
with a click on any link it shows."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Path, Request, Response

from svc.auth.principal import resolve_principal
from svc.deps import Ctx, Uow, request_session
from svc.domains.invites import errors, schemas, service
from svc.errors import error_response
from svc.kit.clock import human_date, relative, rfc3339, utcnow
from svc.kit.pages import wants_html
from svc.models import InviteState, Role
from svc.web import render
from svc.web.deps import OrgAdmin, SignedIn
from svc.web.forms import fields, parse
from svc.web.routing import page_router
from svc.web.session import session_token

router = page_router()

InviteIdPath = Annotated[str, Path(alias="inviteId", max_length=64, pattern=r"^[A-Za-z0-9_]+$")]

ROLES = [Role.viewer.value, Role.member.value, Role.admin.value]
# Invite tokens are URL-safe base64 (svc.kit.tokens); anything else cannot be one of ours.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_NO_REFERRER = {"Referrer-Policy": "no-referrer"}
_FINISHED = {
    InviteState.used: "This invite has already been accepted.",
    InviteState.revoked: "This invite was withdrawn.",
    InviteState.expired: "This invite has expired.",
}


def _when(value: datetime) -> dict[str, str]:
    """An instant three ways: for machines, as a date, and relative to now."""
    return {"iso": rfc3339(value), "date": human_date(value), "relative": relative(value, utcnow())}


async def _lists(uow: Uow, access: OrgAdmin) -> dict[str, Any]:
    invites = await service.list_invites(uow, access.org.id)
    return {"pending": [i for i in invites if i.state == InviteState.pending],
            "expired": [i for i in invites if i.state == InviteState.expired]}


@router.get("/orgs/{orgSlug}/invites")
async def invite_list(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    return await render.render(request, "invites/list.html", title="Invites", roles=ROLES,
                               personal=access.org.personal, **await _lists(uow, access))


@router.post("/orgs/{orgSlug}/invites")
async def create_invite(request: Request, access: OrgAdmin, uow: Uow, ctx: Ctx) -> Response:
    """A new invite, or the same address again (a new link and expiry; the old link stops working).
    The answer shows the link once: in the form's result box (htmx, with the lists updated beside
    it), or on the whole page."""
    form = await fields(request)
    body = parse(schemas.InviteCreate, {"email": form.get("email", ""), "role": form.get("role", "member")})
    issued = await service.invite(uow, access, email=body.email, role=body.role, settings=ctx.settings)
    values = {"issued": issued.invite, "resent": not issued.created,
              "link": f"{ctx.settings.public_url}/invites/{issued.token}",
              "expires": _when(issued.invite.expires_at), **await _lists(uow, access)}
    if render.is_htmx(request):
        return await render.render_part(request, "invites/_issued.html", org_slug=access.org.slug, oob=True,
                                        **values)
    return await render.render(request, "invites/list.html", title="Invites", roles=ROLES,
                               personal=access.org.personal, status=201 if issued.created else 200, **values)


@router.post("/orgs/{orgSlug}/invites/{inviteId}/resend")
async def resend_invite(request: Request, access: OrgAdmin, uow: Uow, ctx: Ctx, invite_id: InviteIdPath) -> Response:
    """"Send again" on a listed invite: the same call as inviting its address again."""
    row = next((i for i in await service.list_invites(uow, access.org.id) if i.id == invite_id), None)
    if row is None:
        raise errors.InviteNotFound()
    issued = await service.invite(uow, access, email=row.email, role=row.role, settings=ctx.settings)
    return render.redirect(request, f"/orgs/{access.org.slug}/invites",
                           flash=f"A new invite to {row.email} is queued to be mailed; it expires "
                                 f"{relative(issued.invite.expires_at, utcnow())}. The earlier link no longer works.")


@router.post("/orgs/{orgSlug}/invites/{inviteId}/revoke")
async def revoke_invite(request: Request, access: OrgAdmin, uow: Uow, invite_id: InviteIdPath) -> Response:
    row = next((i for i in await service.list_invites(uow, access.org.id) if i.id == invite_id), None)
    await service.revoke(uow, access, invite_id)
    what = f"The invite to {row.email}" if row is not None else "The invite"
    return render.redirect(request, f"/orgs/{access.org.slug}/invites",
                           flash=f"{what} was revoked: its link no longer works.")


# The invite link's page.

def _checked(token: str) -> str:
    if not 1 <= len(token) <= 128 or not set(token) <= _TOKEN_CHARS:
        raise _not_valid()
    return token


def _not_valid() -> errors.InviteNotFound:
    return errors.InviteNotFound("This invite link is not valid: check that it was copied whole")


@router.get("/invites/{token}")
async def invite_page(request: Request, token: str, uow: Uow, ctx: Ctx) -> Response:
    """For anyone with the link; signed in or not, it never redirects (the cookie is read here, as
    `/` does, so the frame shows the navigation to a signed-in person)."""
    try:
        view = await service.preview(uow, _checked(token))
    except errors.InviteNotFound:
        err = _not_valid()
        if not wants_html(request):
            return error_response(err)
        raise err from None
    cookie = session_token(request, ctx.settings)
    principal = await resolve_principal(request_session(request), cookie) if cookie else None
    viewer = principal if principal is not None and principal.kind == "session" else None
    request.state.viewer = viewer
    return await render.render(
        request, "invites/accept.html", title=f"Invite to {view.org.name}", headers=_NO_REFERRER, view=view,
        token=token, pending=view.state == InviteState.pending, finished=_FINISHED.get(view.state),
        expires=_when(view.expires_at), link=f"{ctx.settings.public_url}/invites/{token}",
        signin=f"/signin?next=/invites/{token}", session_ended=cookie is not None and viewer is None)


@router.post("/invites/{token}/accept")
async def accept_invite(request: Request, token: str, principal: SignedIn, uow: Uow, ctx: Ctx) -> Response:
    already, org = await service.accept(uow, principal, _checked(token), ctx.settings)
    said = (f"You were already a member of {org.name}; your role there stays {org.role}." if already
            else f"You joined {org.name} as {org.role}.")
    return render.redirect(request, f"/orgs/{org.slug}/projects", flash=said)
