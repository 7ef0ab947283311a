"""Deployments: a project's versions (newest first, paged like the API), rollback with one click
and a confirmation, and a new version uploaded from the browser.

The upload is the API's deploy (deployments.service.check_upload and .deploy, the same body
helper, READ_THEN_WRITE for the same reason): static/upload.js sends the bundle itself as the
request body, a `.tar.gz` as it is or a folder packed into one in the browser, and puts the
answer (a fragment: the live URL, or the refusal in words) on the page. app.py's body cap leaves
this path to the deploy's own bounds (deployments.router.is_bundle_upload)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request, Response

from svc.auth.roles import at_least
from svc.deps import Ctx, Uow
from svc.domains.deployments import schemas, service
from svc.domains.deployments.settings import DeploymentSettings
from svc.domains.projects import service as projects
from svc.models import ProjectState, Role
from svc.uow import runs
from svc.web import render
from svc.web.deps import ProjectMember, ProjectViewer
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

PAGE_SIZE = 50
BeforeQuery = Annotated[int | None, Query(ge=1, le=schemas.MAX_VERSION)]


def _size(n: int) -> str:
    """Bytes for a person: 512 B, 14.2 KB, 3.1 MB (powers of 1024, as `du -h` says them)."""
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _base(org_slug: str, project: str) -> str:
    return f"/orgs/{org_slug}/projects/{project}/deployments"


@router.get("/orgs/{orgSlug}/projects/{projectName}/deployments")
async def deployment_list(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx,
                          cursor: BeforeQuery = None, before: BeforeQuery = None) -> Response:
    # The page follows nextCursor as `cursor`, as the API does (`before`: its earlier name).
    before = cursor or before
    rows, next_cursor = await projects.list_deployments(uow, p.project, limit=PAGE_SIZE, before=before)
    detail = await projects.project_detail(uow, p.project, p.access.org, ctx.config)
    values: dict[str, Any] = {
        "rows": rows, "cursor": next_cursor, "before": before, "url": detail.url, "project": p.project.name,
        "live_version": detail.live_deployment.version if detail.live_deployment else None,
        "org_slug": p.access.org.slug, "page_url": _base(p.access.org.slug, p.project.name), "size": _size,
        "can_change": at_least(p.access.role, Role.member), "active": p.project.state == ProjectState.active,
    }
    if render.is_htmx(request):  # upload.js refreshes the list after a deploy
        return await render.render_part(request, "deployments/_list.html", **values)
    return await render.render(request, "deployments/list.html", title=f"{p.project.name}: deployments", **values)


@router.post("/orgs/{orgSlug}/projects/{projectName}/deployments/rollback")
async def rollback(request: Request, p: ProjectMember, uow: Uow, ctx: Ctx) -> Response:
    body = parse(schemas.RollbackRequest, {"version": (await fields(request)).get("version", "")})
    view = await service.rollback(uow, p.access, p.project.name, body.version)
    detail = await projects.project_detail(uow, p.project, p.access.org, ctx.config)
    return render.redirect(request, _base(p.access.org.slug, p.project.name),
                           flash=f"Version {view.version} is live again at {detail.url}")


@router.post("/orgs/{orgSlug}/projects/{projectName}/deployments/upload")
@runs(service.deploy)
async def upload(request: Request, p: ProjectMember, uow: Uow, ctx: Ctx) -> Response:
    """The body is the bundle (upload.js sends it with the page's CSRF token in X-CSRF-Token and
    HX-Request, so a refusal comes back as the error fragment rather than a whole page)."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    bound = ctx.settings_of(DeploymentSettings).max_bundle_bytes
    service.check_upload(media, request.headers.get("content-length"), bound)
    # The address is read before the deploy: its body streams in with no transaction open.
    detail = await projects.project_detail(uow, p.project, p.access.org, ctx.config)
    view = await service.deploy(uow, p.access, p.project, service.upload_chunks(request.stream()),
                                schemas.GitInfo())
    return await render.render_part(request, "deployments/_deployed.html", status=201, deployment=view,
                                    url=detail.url, size=_size)
