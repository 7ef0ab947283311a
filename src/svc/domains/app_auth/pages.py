"""The project's Auth tab: the grant (members) and revoke (admins), the providers with the callback
address to register at each for every host of the project (to copy), the settings form, and how
many end users signed up. The same service calls and role rules as the API's (router.py)."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from svc.adapters.edge.settings import edge_url
from svc.auth.projects import ProjectAccess
from svc.auth.roles import at_least
from svc.deps import Uow
from svc.domains.app_auth import schemas, service
from svc.models import Role
from svc.settings import Config
from svc.uow import runs
from svc.web import render
from svc.web.deps import ProjectAdmin, ProjectMember, ProjectViewer
from svc.web.forms import parse
from svc.web.routing import page_router

router = page_router()

PAGE = "/orgs/{orgSlug}/projects/{projectName}/auth"
PROVIDER_NAMES = {"github": "GitHub", "google": "Google", "microsoft": "Microsoft"}


def _url(p: ProjectAccess) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/auth"


def callback_url(config: Config, host: str, provider: str) -> str:
    """Where the provider sends the end user back: the spec's https://<host>/__svc/auth/callback/<provider>,
    in the scheme and port this svc's edge serves (http under `make run`)."""
    return f"{edge_url(config, host)}/__svc/auth/callback/{provider}"


@router.get(PAGE)
async def auth_page(request: Request, p: ProjectViewer, uow: Uow) -> Response:
    status = await service.status(uow, p.project)
    has_db = await service.has_database(uow, p.project)
    configured = {v.name: v for v in status.providers}
    providers: list[dict[str, Any]] = [
        {"name": name, "title": title, "client_id": configured[name].client_id if name in configured else None,
         "callbacks": [callback_url(uow.ctx.config, host, name) for host in status.hosts]}
        for name, title in PROVIDER_NAMES.items()]
    subscribers = await service.subscribers(uow, p.project)  # last: it may close the reads
    return await render.render(
        request, "app_auth/project.html", title=f"{p.project.name}: Auth", project=p.project.name, auth=status,
        providers=providers, subscribers=subscribers, has_db=has_db, off=service.unavailable(uow.ctx),
        member=at_least(p.access.role, Role.member), admin=at_least(p.access.role, Role.admin), page_url=_url(p))


@router.post(PAGE)
@runs(service.grant)
async def grant(request: Request, p: ProjectMember, uow: Uow) -> Response:
    await service.grant(uow, p.access, p.project)
    return render.redirect(request, _url(p), flash="Auth granted: the project's hosts serve /__svc/auth/ now. "
                                                   "Set a provider to let end users sign in.")


@router.post(PAGE + "/revoke")
@runs(service.revoke)
async def revoke(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return render.redirect(request, _url(p), flash="Auth revoked: /__svc/auth/ goes to the worker again. "
                                                   "The end users, providers and settings are kept.")


@router.post(PAGE + "/settings")
@runs(service.update_settings)
async def settings(request: Request, p: ProjectMember, uow: Uow) -> Response:
    form = await request.form()
    typed = {k: v.strip() for k, v in form.items() if isinstance(v, str)}
    days = typed.get("sessionDays", "")
    patch = parse(schemas.AuthSettingsPatch, {
        "sessionDays": int(days) if days.isdigit() and len(days) < 6 else days,
        "brandName": typed.get("brandName") or None, "brandColor": typed.get("brandColor") or None,
        "logoUrl": typed.get("logoUrl") or None})
    await service.update_settings(uow, p.access, p.project, patch)
    return render.redirect(request, _url(p), flash="Settings saved: the sign-in page shows them from now.")


@router.post(PAGE + "/providers/{provider}")
@runs(service.set_provider)
async def set_provider(request: Request, p: ProjectAdmin, uow: Uow, provider: str) -> Response:
    form = await request.form()
    typed = {k: v for k, v in form.items() if isinstance(v, str)}
    body = parse(schemas.AuthProviderPut, {"clientId": typed.get("clientId", ""),
                                           "clientSecret": typed.get("clientSecret", "")})
    await service.set_provider(uow, p.access, p.project, provider, body)
    return render.redirect(request, _url(p), flash=f"{PROVIDER_NAMES.get(provider, provider)} set: its end users "
                                                   "can sign in with it.")


@router.post(PAGE + "/providers/{provider}/remove")
@runs(service.remove_provider)
async def remove_provider(request: Request, p: ProjectAdmin, uow: Uow, provider: str) -> Response:
    await service.remove_provider(uow, p.access, p.project, provider)
    return render.redirect(request, _url(p), flash=f"{PROVIDER_NAMES.get(provider, provider)} removed: its "
                                                   "identities are gone, the end users are kept.")
