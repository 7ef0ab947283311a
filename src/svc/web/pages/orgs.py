"""Orgs: create one (its creator becomes admin)."""

from __future__ import annotations

from fastapi import Request, Response

from svc.deps import Uow
from svc.domains.orgs import schemas, service
from svc.web import render
from svc.web.deps import SignedIn
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()


@router.get("/orgs/new")
async def new_org_page(request: Request, principal: SignedIn) -> Response:
    return await render.render(request, "orgs/new.html", title="New org")


@router.post("/orgs")
async def create_org(request: Request, principal: SignedIn, uow: Uow) -> Response:
    form = await fields(request)
    body = parse(schemas.OrgCreate, {"slug": form.get("slug", ""), "name": form.get("name")})
    org = await service.create_org(uow, slug=body.slug, name=body.name, creator=principal.user)
    return render.redirect(request, f"/orgs/{org.slug}/projects", flash=f"Org {org.name} created: you are its admin.")
