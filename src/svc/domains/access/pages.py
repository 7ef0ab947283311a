"""Access: who the edge lets through to a project's site (public, org, password; docs/access.md),
and the bypass token CI sends as the Svc-Access-Bypass header.

Everyone in the org sees the mode; admins change it (the API's AccessPolicyPut and
access.service.set_policy) and create or revoke the bypass token. The token is shown once, in the
answer to the post that made it (never in the flash cookie, a log or a URL)."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from svc.adapters.edge.settings import edge_url
from svc.auth.projects import ProjectAccess
from svc.deps import Ctx, Uow
from svc.domains.access import schemas, service
from svc.domains.projects.service import default_hostname
from svc.models import AccessMode
from svc.web import render
from svc.web.deps import ProjectAdmin, ProjectViewer
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

ACCESS = "/orgs/{orgSlug}/projects/{projectName}/access"
BYPASS_HEADER = "Svc-Access-Bypass"

SAID = {
    AccessMode.public: "Access set to public: anyone with the address can open the site.",
    AccessMode.org: "Access set to org: only members of the org can open the site.",
    AccessMode.password: "Access set to password: visitors enter the password to open the site.",
}


def _values(p: ProjectAccess, ctx: Ctx) -> dict[str, Any]:
    org = p.access.org
    return {"project": p.project.name, "policy": schemas.AccessPolicy.of(p.project), "role": p.access.role,
            "site_url": edge_url(ctx.config, default_hostname(ctx.config, org, p.project.name)),
            "header": BYPASS_HEADER, "page_url": f"/orgs/{org.slug}/projects/{p.project.name}/access"}


@router.get(ACCESS)
async def access_page(request: Request, p: ProjectViewer, ctx: Ctx) -> Response:
    return await render.render(request, "access/page.html", title=f"{p.project.name}: access", **_values(p, ctx))


@router.post(ACCESS)
async def set_policy(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    form = await fields(request)
    mode = form.get("mode", "")
    # The password field belongs to the password mode: typed and then another mode picked, it is left out.
    body = parse(schemas.AccessPolicyPut, {"mode": mode, "password": form.get("password") if mode == "password"
                                           else None})
    await service.set_policy(uow, p.access, p.project, mode=body.mode, password=body.password)
    return render.redirect(request, f"/orgs/{p.access.org.slug}/projects/{p.project.name}/access",
                           flash=SAID[body.mode])


@router.post(ACCESS + "/bypass")
async def new_bypass(request: Request, p: ProjectAdmin, uow: Uow, ctx: Ctx) -> Response:
    secret = await service.new_bypass(uow, p.access, p.project)
    values = {**_values(p, ctx), "secret": secret}
    if render.is_htmx(request):  # into the form's result box, with the token's state updated beside it
        return await render.render_part(request, "access/_bypass_created.html", **values)
    return await render.render(request, "access/page.html", title=f"{p.project.name}: access", **values)


@router.post(ACCESS + "/bypass/revoke")
async def revoke_bypass(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    had = p.project.bypass_secret_hash is not None
    await service.revoke_bypass(uow, p.access, p.project)
    return render.redirect(request, f"/orgs/{p.access.org.slug}/projects/{p.project.name}/access",
                           flash=f"Bypass token revoked: the {BYPASS_HEADER} header no longer passes." if had
                           else "There was no bypass token to revoke.")
