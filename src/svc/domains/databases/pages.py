"""The Database page of a project: whether it has one; its connection details (the password
behind a reveal, members and admins only, as /connect); token users (a new one's password shown
once, on the page that made it); create.

Viewers see whether there is a database and where it is, never a password or a token."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Request, Response

from svc.auth.roles import at_least
from svc.deps import Uow
from svc.domains.databases import errors, schemas, service
from svc.models import Role
from svc.uow import runs
from svc.web import render
from svc.web.deps import ProjectMember, ProjectViewer
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

PAGE = "/orgs/{orgSlug}/projects/{projectName}/database"
TokenUserPath = Annotated[str, Path(alias="tokenUser", max_length=63)]


def _url(p: Any) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/database"


async def _page(request: Request, p: Any, uow: Uow, **shown: Any) -> Response:
    member = at_least(p.access.role, Role.member)
    has = await service.has_database(uow, p.project)
    endpoint = off = None
    try:
        endpoint = service.endpoint(uow.ctx, p.project)
    except errors.DatabasesOff as exc:
        off = exc.message
    except errors.NodeUnavailable:
        endpoint = None
    tokens = await service.list_tokens(uow, p.project) if has and member else []
    return await render.render(request, "databases/page.html", title=f"{p.project.name}: database",
                               project=p.project.name, has=has, member=member, endpoint=endpoint, off=off,
                               user=service.role_of(uow.ctx, p.project) if has and not off else None,
                               tokens=tokens, page_url=_url(p), max_minutes=schemas.MAX_TOKEN_MINUTES, **shown)


@router.get(PAGE)
async def database_page(request: Request, p: ProjectViewer, uow: Uow) -> Response:
    return await _page(request, p, uow)


@router.post(PAGE)
@runs(service.create_database)
async def create_database(request: Request, p: ProjectMember, uow: Uow) -> Response:
    await service.create_database(uow, p.access, p.project)
    return render.redirect(request, _url(p), flash="Database ready. Its worker gets env.db on its next request.")


@router.post(PAGE + "/reveal")
@runs(service.connect)
async def reveal(request: Request, p: ProjectMember, uow: Uow) -> Response:
    found = await service.connect(uow, p.project)
    return await _page(request, p, uow, password=found.password)


@router.post(PAGE + "/tokens")
@runs(service.create_token)
async def create_token(request: Request, p: ProjectMember, uow: Uow) -> Response:
    form = await fields(request)
    body = parse(schemas.TokenCreate, {"expiresInMinutes": form.get("minutes") or 60})
    made = await service.create_token(uow, p.access, p.project, body)
    return await _page(request, p, uow, new_token=made)


@router.post(PAGE + "/tokens/{tokenUser}/delete")
@runs(service.delete_token)
async def delete_token(request: Request, p: ProjectMember, uow: Uow, user: TokenUserPath) -> Response:
    await service.delete_token(uow, p.access, p.project, user)
    return render.redirect(request, _url(p), flash=f"Token user {user} deleted; it can no longer connect.")
