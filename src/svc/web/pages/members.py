"""Members of an org: the list with roles (members and admins see it, as in the API), an admin's
role change, removal and "add a member who has signed in before", and everyone's "leave this org".

The same service calls and access rules as the API's orgs router: listing needs the member role,
changing others needs admin, and anyone may remove themselves (leave); the last admin can neither
be demoted, removed nor leave (the service's last_admin, said in words by web/routing.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request, Response

from svc.auth.roles import at_least
from svc.deps import Ctx, Uow
from svc.domains.orgs import schemas, service
from svc.models import Role, User
from svc.web import render
from svc.web.deps import OrgAdmin, OrgViewer
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

UserIdPath = Annotated[str, Path(alias="userId", max_length=64)]

ROLES = [Role.viewer.value, Role.member.value, Role.admin.value]


def _providers(ctx: Ctx) -> list[str]:
    """The sign-in providers of this svc: whom "add a member" can name."""
    names = ["dev"] if ctx.settings.enable_dev_auth else []
    if ctx.adapters.idp is not None:
        names.append(ctx.adapters.idp.name)
    return names


@router.get("/orgs/{orgSlug}/members")
async def member_list(request: Request, access: OrgViewer, uow: Uow, ctx: Ctx) -> Response:
    can_list = at_least(access.role, Role.member)
    rows = []
    if can_list:
        rows = [{"id": uid, "provider": provider, "subject": subject, "email": email, "name": name, "role": role,
                 "joined_at": joined_at}
                for uid, provider, subject, email, name, role, joined_at in await service.list_members(uow,
                                                                                                  access.org.id)]
    admins = sum(1 for r in rows if r["role"] == Role.admin.value)
    return await render.render(request, "members/list.html", title="Members", rows=rows, can_list=can_list,
                               is_admin=access.role == Role.admin, role=access.role.value,
                               me=access.principal.user.id, admins=admins, roles=ROLES,
                               personal=access.org.personal, providers=_providers(ctx))


@router.post("/orgs/{orgSlug}/members")
async def add_member(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    form = await fields(request)
    body = parse(schemas.MemberAdd, {"provider": form.get("provider", ""), "subject": form.get("subject", ""),
                                     "role": form.get("role", "")})
    _, user = await service.add_member(uow, access, provider=body.provider, subject=body.subject, role=body.role)
    return render.redirect(request, f"/orgs/{access.org.slug}/members",
                           flash=f"{user.name or user.subject} is now in {access.org.name} as {body.role.value}.")


@router.post("/orgs/{orgSlug}/members/{userId}/role")
async def set_role(request: Request, access: OrgAdmin, uow: Uow, user_id: UserIdPath) -> Response:
    body = parse(schemas.MemberRole, {"role": (await fields(request)).get("role", "")})
    _, user = await service.set_role(uow, access, user_id, body.role)
    who = "You are" if user.id == access.principal.user.id else f"{user.name or user.subject} is"
    return render.redirect(request, f"/orgs/{access.org.slug}/members", flash=f"{who} now {body.role.value}.")


@router.post("/orgs/{orgSlug}/members/{userId}/remove")
async def remove_member(request: Request, access: OrgViewer, uow: Uow, user_id: UserIdPath) -> Response:
    """Removing someone else needs admin (the service checks); removing yourself is leaving."""
    await service.remove_member(uow, access, user_id)
    if user_id == access.principal.user.id:
        return render.redirect(request, "/", flash=f"You left {access.org.name}.")
    user = await uow.session.get(User, user_id)  # the account stays; only its membership went
    who = (user.name or user.subject) if user is not None else "The member"
    return render.redirect(request, f"/orgs/{access.org.slug}/members",
                           flash=f"{who} is no longer a member of {access.org.name}.")
