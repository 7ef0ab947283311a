"""The orgs area's pages: the dashboard's front door (`/`: the signed-in person's first org, or
sign-in; a client that asks `/` for JSON gets what answers here: {service, name, version, api, docs,
openapi}), the org switcher's target, a new org (its creator becomes admin), the members of an org
and org settings.

Members: the list with roles (members and admins see it, as in the API), an admin's role change,
removal and "add a member who has signed in before", and everyone's "leave this org"; the same
service calls and access rules as the API's orgs router (the last admin can neither be demoted,
removed nor leave: last_admin, said in words by web/routing.py).

Org settings: what the org is (slug, plan, limit), and for its admins rename and delete. Delete
needs the slug typed (OrgDelete, as the API); an org that still holds what an area declares in its
manifest's holdings (projects, zones) is refused with org_not_empty, and the error page lists them.
A personal org is never deleted."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Path, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from svc import __version__
from svc.auth.caller import Principal
from svc.auth.principal import resolve_principal
from svc.auth.roles import at_least
from svc.context import AppContext
from svc.deps import Ctx, Uow, request_session, request_uow
from svc.domains.orgs import schemas, service
from svc.kit.names import SLUG_PATTERN
from svc.kit.pages import wants_html
from svc.models import Role, User
from svc.openapi import DOCS_URL
from svc.web import render
from svc.web.deps import OrgAdmin, OrgViewer, SignedIn
from svc.web.forms import fields, parse
from svc.web.routing import page_router
from svc.web.session import session_token

router = page_router()


async def org_switcher(request: Request, viewer: Principal | None) -> dict[str, Any]:
    """What the orgs area adds to every page's frame: the orgs of the person looking (the switcher)
    and the org in view."""
    if viewer is None:
        return {}
    ctx: AppContext = request.app.state.ctx
    memberships = await service.memberships_of(request_uow(request), viewer.user, ctx.config)
    slug = getattr(request.state, "org_slug", None)
    return {"orgs": memberships, "org": next((m for m in memberships if m.slug == slug), None)}

@router.get("/")
async def home(request: Request, uow: Uow, ctx: Ctx) -> Response:
    settings = ctx.settings
    if not wants_html(request):
        return JSONResponse({"service": "svc", "name": settings.service_name, "version": __version__,
                             "api": f"{settings.public_url}/v1", "docs": DOCS_URL, "openapi": "/v1/openapi.json"},
                            headers={"Cache-Control": "no-cache"})
    token = session_token(request, settings)
    principal = await resolve_principal(request_session(request), token) if token else None
    if principal is None or principal.kind != "session":
        return RedirectResponse("/signin" + ("?ended=1" if token else ""), status_code=303)
    memberships = await service.memberships_of(uow, principal.user, ctx.config)
    first = next((m for m in memberships if m.personal), memberships[0] if memberships else None)
    return RedirectResponse(f"/orgs/{first.slug}/projects" if first else "/orgs/new", status_code=303)


@router.get("/switch")
async def switch(principal: SignedIn, org: str = "") -> Response:
    """The org switcher's form (a GET, so it works without script)."""
    if not 3 <= len(org) <= 32 or re.match(SLUG_PATTERN, org) is None:
        return RedirectResponse("/", status_code=303)
    return RedirectResponse(f"/orgs/{org}/projects", status_code=303)


@router.get("/orgs/new")
async def new_org_page(request: Request, principal: SignedIn) -> Response:
    return await render.render(request, "orgs/new.html", title="New org")


@router.post("/orgs")
async def create_org(request: Request, principal: SignedIn, uow: Uow) -> Response:
    form = await fields(request)
    body = parse(schemas.OrgCreate, {"slug": form.get("slug", ""), "name": form.get("name")})
    org = await service.create_org(uow, slug=body.slug, name=body.name, creator=principal.user)
    return render.redirect(request, f"/orgs/{org.slug}/projects", flash=f"Org {org.name} created: you are its admin.")


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
    return await render.render(request, "orgs/members.html", title="Members", rows=rows, can_list=can_list,
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


@router.get("/orgs/{orgSlug}/settings")
async def settings_page(request: Request, access: OrgViewer, ctx: Ctx) -> Response:
    org = access.org
    return await render.render(request, "orgs/settings.html", title="Org settings",
                               is_admin=access.role == Role.admin, role=access.role.value, slug=org.slug,
                               name=org.name, personal=org.personal, plan=org.plan, created_at=org.created_at,
                               limit=service.project_limit(ctx.config, org.plan))


@router.post("/orgs/{orgSlug}/settings/name")
async def rename(request: Request, access: OrgAdmin, uow: Uow, ctx: Ctx) -> Response:
    body = parse(schemas.OrgPatch, {"name": (await fields(request)).get("name", "")})
    old = access.org.name
    renamed = await service.rename_org(uow, access, body.name, ctx.config)
    return render.redirect(request, f"/orgs/{renamed.slug}/settings",
                           flash=f"Renamed: {old} is now called {renamed.name}.")


@router.post("/orgs/{orgSlug}/settings/delete")
async def delete(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    body = parse(schemas.OrgDelete, {"confirm": (await fields(request)).get("confirm", "")})
    name, slug = access.org.name, access.org.slug
    await service.delete_org(uow, access, body.confirm)
    return render.redirect(request, "/", flash=f"The org {name} ({slug}) was deleted.")
