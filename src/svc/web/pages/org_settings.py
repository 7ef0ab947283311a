"""Org settings: what the org is (slug, plan, limit), and for its admins rename and delete.

Delete needs the slug typed (OrgDelete, as the API); an org that still holds projects (or what
later areas register in orgs/holdings.py) is refused with org_not_empty, and the error page lists
the holdings (web/routing.py, _error.html). A personal org is never deleted."""

from __future__ import annotations

from fastapi import Request, Response

from svc.deps import Ctx, Uow
from svc.domains.orgs import schemas, service
from svc.models import Role
from svc.web import render
from svc.web.deps import OrgAdmin, OrgViewer
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()


@router.get("/orgs/{orgSlug}/settings")
async def settings_page(request: Request, access: OrgViewer, ctx: Ctx) -> Response:
    org = access.org
    return await render.render(request, "org_settings/settings.html", title="Org settings",
                               is_admin=access.role == Role.admin, role=access.role.value, slug=org.slug,
                               name=org.name, personal=org.personal, plan=org.plan, created_at=org.created_at,
                               limit=service.project_limit(ctx.settings, org.plan))


@router.post("/orgs/{orgSlug}/settings/name")
async def rename(request: Request, access: OrgAdmin, uow: Uow, ctx: Ctx) -> Response:
    body = parse(schemas.OrgPatch, {"name": (await fields(request)).get("name", "")})
    old = access.org.name
    renamed = await service.rename_org(uow, access, body.name, ctx.settings)
    return render.redirect(request, f"/orgs/{renamed.slug}/settings",
                           flash=f"Renamed: {old} is now called {renamed.name}.")


@router.post("/orgs/{orgSlug}/settings/delete")
async def delete(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    body = parse(schemas.OrgDelete, {"confirm": (await fields(request)).get("confirm", "")})
    name, slug = access.org.name, access.org.slug
    await service.delete_org(uow, access, body.confirm)
    return render.redirect(request, "/", flash=f"The org {name} ({slug}) was deleted.")
