"""Secrets: a project's names, versions and when each was last set; set one (a new name starts at
version 1, setting it again bumps the version) and delete one. Values go in and never come out:
no page shows one, and the list is built from the API's SecretMeta, which has no value field.

Members and admins only, like the API (a viewer is refused in words)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request, Response

from svc.deps import Ctx, Uow
from svc.domains.secrets import schemas, service
from svc.web import render
from svc.web.deps import ProjectMember
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

SECRETS = "/orgs/{orgSlug}/projects/{projectName}/secrets"
# The rules of a name are the service's (check_name): the path only bounds its length.
SecretNamePath = Annotated[str, Path(alias="secretName", max_length=64)]


def _url(p: ProjectMember) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/secrets"


@router.get(SECRETS)
async def secrets_page(request: Request, p: ProjectMember, uow: Uow) -> Response:
    rows = [schemas.SecretMeta(name=r.name, version=r.version, updated_at=r.updated_at)
            for r in await service.list_secrets(uow, p.project)]
    return await render.render(request, "secrets/page.html", title=f"{p.project.name}: secrets",
                               project=p.project.name, rows=rows, limit=service.MAX_SECRETS, page_url=_url(p),
                               reserved=sorted(service.RESERVED), reserved_prefix=service.RESERVED_PREFIX)


@router.post(SECRETS)
async def set_secret(request: Request, p: ProjectMember, uow: Uow, ctx: Ctx) -> Response:
    name = (await fields(request)).get("name", "").strip()
    service.check_name(name)  # the API's path rule, said before anything about the value
    # An empty value is a value (as in the API): read it from the form as sent. Browsers send a
    # textarea's line breaks as CRLF; a pasted key or certificate keeps the LF it was written with.
    raw = (await request.form()).get("value", "")
    value = raw.replace("\r\n", "\n") if isinstance(raw, str) else raw
    body = parse(schemas.SecretPut, {"value": value})
    row = await service.set_secret(uow, ctx, p.access, p.project, name, body.value)
    return render.redirect(request, _url(p), flash=f"Secret {row.name} set (version {row.version}).")


@router.post(SECRETS + "/{secretName}/delete")
async def delete_secret(request: Request, p: ProjectMember, uow: Uow, name: SecretNamePath) -> Response:
    await service.delete_secret(uow, p.access, p.project, name)
    return render.redirect(request, _url(p), flash=f"Secret {name} deleted.")
