"""Projects: the org's list (with what each serves, and the plan's limit shown before it is hit),
create, the overview (the API's ProjectOverview), and delete with the teardown's progress live.

This module is the pattern for a dashboard page (docs/architecture.md, "How to add a dashboard
page"): routes from `page_router()`, access from web/deps.py, input through the API's own request
models (web/forms.py), the same service call as the API route, then `render.render` or, after a
change, `render.redirect` with a one-time notice."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Request, Response
from fastapi.responses import RedirectResponse

from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.deps import Ctx, Uow
from svc.domains.operations import service as operations
from svc.domains.operations.schemas import Operation as OperationView
from svc.domains.orgs import service as orgs
from svc.domains.projects import errors, schemas, service
from svc.models import OperationKind, TeardownPhase
from svc.uow import UnitOfWork
from svc.web import render
from svc.web.deps import OrgMember, OrgViewer, ProjectAdmin, ProjectViewer
from svc.web.forms import fields, parse, refusal, refused
from svc.web.routing import page_router

router = page_router()

OpIdPath = Annotated[str, Path(alias="opId", max_length=64)]

TEARDOWN_STEPS = [
    (TeardownPhase.routing, "Stop serving"),
    (TeardownPhase.files, "Remove deployed files"),
    (TeardownPhase.grants, "Revoke grants"),
    (TeardownPhase.database, "Remove the database (its final backup is kept)"),
    (TeardownPhase.metadata, "Remove records"),
    (TeardownPhase.done, "Done"),
]


@router.get("/orgs/{orgSlug}")
async def org_home(access: OrgViewer) -> Response:
    return RedirectResponse(f"/orgs/{access.org.slug}/projects", status_code=303)


@router.get("/orgs/{orgSlug}/projects")
async def project_list(request: Request, access: OrgViewer, uow: Uow, ctx: Ctx) -> Response:
    return await _list(request, access, uow, ctx)


def _limit_values(access: OrgAccess, ctx: AppContext) -> dict[str, Any]:
    """What the plan's limit is, and how the org gets more projects: at the free plan's limit on a
    svc that bills, the upgrade through the provider's checkout (the org's Billing page)."""
    return {"limit": orgs.project_limit(ctx.config, access.org.plan), "plan": access.org.plan,
            "upgrade": access.org.plan == "free" and ctx.adapters.billing is not None,
            "admin": access.role == "admin", "pro_limit": orgs.project_limit(ctx.config, "pro"),
            "billing_url": f"/orgs/{access.org.slug}/billing"}


async def _list(request: Request, access: OrgAccess, uow: UnitOfWork, ctx: AppContext, *,
                status: int = 200) -> Response:
    rows = await service.summaries(uow, access.org, ctx.config)
    return await render.render(request, "projects/list.html", title="Projects", rows=rows, status=status,
                               can_create=access.role != "viewer", **_limit_values(access, ctx))


@router.post("/orgs/{orgSlug}/projects")
async def create_project(request: Request, access: OrgMember, uow: Uow, ctx: Ctx) -> Response:
    body = parse(schemas.ProjectCreate, {"name": (await fields(request)).get("name", "")})
    try:
        project = await service.create_project(uow, access, body.name, ctx.config)
    except errors.ProjectLimit as err:
        # Another tab or the CLI took the last one meanwhile: the list again, saying how to get more.
        problem = refusal(request, err, fields={})

        async def show(reading: UnitOfWork) -> Response:
            if render.is_htmx(request):  # into the form's result: the words and the way to more projects
                return await render.render_part(request, "projects/_limit.html", status=problem.status,
                                                **_limit_values(access, ctx))
            return await _list(request, access, reading, ctx, status=problem.status)
        return refused(problem, show)
    return render.redirect(request, f"/orgs/{access.org.slug}/projects/{project.name}",
                           flash=f"Project {project.name} created: deploy to {project.url}")


@router.get("/orgs/{orgSlug}/projects/{projectName}")
async def overview(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx) -> Response:
    view = await service.overview(uow, p.project, p.access.org, ctx.config)
    return await render.render(request, "projects/overview.html", title=p.project.name, view=view,
                               project=p.project.name, role=p.access.role,
                               resources=_resources(ctx, view, f"/orgs/{p.access.org.slug}/projects/{p.project.name}"))


# The resources a bundle may declare in svc.json that no area of this svc grants yet: said so
# on the Overview rather than "no".
NOT_OFFERED = {
    "storage": ("env.storage", "Object storage for files"),
    "email": ("env.email", "Sending and receiving mail"),
}


def _resources(ctx: AppContext, view: schemas.ProjectOverview, url: str) -> list[dict[str, Any]]:
    """Each resource's row on the Overview: what the worker gets, whether svc.json declares it, and
    its state: granted, or how to grant it (the tab's button, the CLI's command), or why it cannot be."""
    offered = {r.name: r for r in ctx.resources}
    rows = []
    for name, state in view.resources.items():
        row: dict[str, Any] = {"name": name, "declared": state.declared, "granted": state.provisioned}
        found = offered.get(name)
        if found is None:
            binding, what = NOT_OFFERED.get(name, (None, ""))
            rows.append(row | {"binding": binding, "what": what, "offered": False})
            continue
        rows.append(row | {"binding": found.binding, "what": found.what, "offered": True,
                           "off": found.off(ctx) if found.off else None,
                           "command": found.command.format(project=view.project.name),
                           "tab": url + found.tab, "button": found.button})
    return sorted(rows, key=lambda row: not row["offered"])  # what this svc grants first


@router.get("/orgs/{orgSlug}/projects/{projectName}/settings")
async def settings_page(request: Request, p: ProjectViewer) -> Response:
    return await render.render(request, "projects/settings.html", title=f"{p.project.name}: settings",
                               project=p.project.name, role=p.access.role, state=p.project.state)


@router.post("/orgs/{orgSlug}/projects/{projectName}/delete")
async def delete_project(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    body = parse(schemas.ProjectDelete, {"confirm": (await fields(request)).get("confirm", "")})
    op = await service.start_teardown(uow, p.access, p.project, body.confirm)
    return render.redirect(request, f"/orgs/{p.access.org.slug}/operations/{op.id}")


def _progress(op: OperationView) -> dict[str, Any]:
    phases = [phase for phase, _ in TEARDOWN_STEPS]
    at = phases.index(TeardownPhase(op.phase)) if op.phase in phases else 0
    return {"op": op, "steps": TEARDOWN_STEPS, "at": at, "finished": op.finished_at is not None,
            "kind": "Deleting" if op.kind == OperationKind.teardown else op.kind}


@router.get("/orgs/{orgSlug}/operations/{opId}")
async def operation_page(request: Request, access: OrgViewer, uow: Uow, op_id: OpIdPath) -> Response:
    row = await operations.get_operation(uow, access, op_id)
    values = _progress(OperationView.model_validate(row))
    if render.is_htmx(request):  # the progress box polls itself until the operation ends
        return await render.render_part(request, "projects/_operation.html", **values, org_slug=access.org.slug)
    return await render.render(request, "projects/operation.html", title=f"{values['kind']} {row.project_name}",
                               project_name=row.project_name, org_slug=access.org.slug, **values)
