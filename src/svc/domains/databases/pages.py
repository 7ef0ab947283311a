"""The Database page of a project: whether it has one; its connection details (the password
behind a reveal, members and admins only, as /connect); token users (a new one's password shown
once, on the page that made it); create.

Viewers see whether there is a database and where it is, never a password or a token."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Request, Response

from svc.auth.roles import at_least
from svc.deps import Uow
from svc.domains.databases import errors, operations, schemas, service
from svc.domains.operations.service import running_for
from svc.errors import BadRequest
from svc.models import DatabaseOpPhase as Phase
from svc.models import Role
from svc.uow import runs
from svc.web import render
from svc.web.deps import ProjectAdmin, ProjectMember, ProjectViewer
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

PAGE = "/orgs/{orgSlug}/projects/{projectName}/database"
TokenUserPath = Annotated[str, Path(alias="tokenUser", max_length=63)]
OpIdPath = Annotated[str, Path(alias="opId", max_length=64)]


def _swap(target: str) -> dict[str, str]:
    """htmx: swap the answer over `target` (not into the form's result box)."""
    return {"HX-Retarget": target, "HX-Reswap": "outerHTML"}


def _url(p: Any) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/database"


RESTORE_STEPS = [(Phase.draining, "Close connections"), (Phase.sealing, "Back up what is there now"),
                 (Phase.committing, "Put the chosen generation in place"), (Phase.reactivation, "Open again"),
                 (Phase.done, "Done")]
DELETE_STEPS = [(Phase.draining, "Close connections"), (Phase.sealing, "Take the final backup"),
                (Phase.committing, "Remove the database"), (Phase.done, "Done")]
BACKUP_STEPS = [(Phase.dumping, "Take the backup"), (Phase.verifying, "Prove it restores"), (Phase.done, "Done")]
STEPS = {"restore": RESTORE_STEPS, "delete": DELETE_STEPS, "backup": BACKUP_STEPS}


def _progress(op: Any) -> dict[str, Any]:
    steps = STEPS.get(op.kind, DELETE_STEPS)
    phases = [phase.value for phase, _ in steps]
    return {"op": schemas.DatabaseOperation.of(op), "steps": steps,
            "at": phases.index(op.phase) if op.phase in phases else 0, "finished": op.terminal_code is not None}


async def _page(request: Request, p: Any, uow: Uow, **shown: Any) -> Response:
    member = at_least(p.access.role, Role.member)
    has = await service.has_database(uow, p.project)
    listed = await service.list_generations(uow, p.project) if member else None
    op_id = request.query_params.get("op")
    op = None
    if member and op_id:
        op = await operations.get(uow, p.project, op_id[:64])
    elif member:
        op = await running_for(uow, p.project.id)
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
                               db_user=service.role_of(uow.ctx, p.project) if has and not off else None,
                               tokens=tokens, page_url=_url(p), max_minutes=schemas.MAX_TOKEN_MINUTES,
                               admin=at_least(p.access.role, Role.admin), listed=listed,
                               **(_progress(op) if op is not None else {}), **shown)


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
    if render.is_htmx(request):  # the password in place of the button (not in the form's result box)
        return await render.render_part(request, "databases/_password.html", password=found.password,
                                        page_url=_url(p), headers=_swap("#db-password"))
    return await _page(request, p, uow, password=found.password)


@router.post(PAGE + "/tokens")
@runs(service.create_token)
async def create_token(request: Request, p: ProjectMember, uow: Uow) -> Response:
    typed = (await fields(request)).get("minutes", "").strip() or "60"
    if not typed.isdigit() or not 1 <= int(typed) <= schemas.MAX_TOKEN_MINUTES:
        raise BadRequest(f"Valid for (minutes) must be a whole number from 1 to {schemas.MAX_TOKEN_MINUTES:,}")
    made = await service.create_token(uow, p.access, p.project, schemas.TokenCreate(expiresInMinutes=int(typed)))
    if render.is_htmx(request):  # the section again, with the new token and the list that holds it
        tokens = await service.list_tokens(uow, p.project)
        return await render.render_part(request, "databases/_tokens.html", new_token=made, tokens=tokens,
                                        page_url=_url(p), max_minutes=schemas.MAX_TOKEN_MINUTES,
                                        headers=_swap("#db-tokens"))
    return await _page(request, p, uow, new_token=made)


@router.get(PAGE + "/operations/{opId}")
async def operation_part(request: Request, p: ProjectMember, uow: Uow, op_id: OpIdPath) -> Response:
    """The progress box of a restore or delete: it asks again every second until the operation ends."""
    op = await operations.get(uow, p.project, op_id)
    return await render.render_part(request, "databases/_operation.html", page_url=_url(p), **_progress(op))


@router.post(PAGE + "/backup")
@runs(operations.start_backup)
async def back_up(request: Request, p: ProjectMember, uow: Uow) -> Response:
    op = await operations.start_backup(uow, p.access, p.project)
    return render.redirect(request, f"{_url(p)}?op={op.id}")


@router.post(PAGE + "/restore")
@runs(operations.start_restore)
async def restore(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    form = await fields(request)
    body = parse(schemas.RestoreRequest, {"epoch": form.get("epoch", ""), "seq": form.get("seq", "")})
    op = await operations.start_restore(uow, p.access, p.project, body)
    return render.redirect(request, f"{_url(p)}?op={op.id}")


@router.post(PAGE + "/delete")
@runs(operations.start_delete)
async def delete(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    body = parse(schemas.DeleteRequest, {"confirm": (await fields(request)).get("confirm", "")})
    op = await operations.start_delete(uow, p.access, p.project, body)
    return render.redirect(request, f"{_url(p)}?op={op.id}")


@router.post(PAGE + "/tokens/{tokenUser}/delete")
@runs(service.delete_token)
async def delete_token(request: Request, p: ProjectMember, uow: Uow, user: TokenUserPath) -> Response:
    await service.delete_token(uow, p.access, p.project, user)
    return render.redirect(request, _url(p), flash=f"Token user {user} deleted; it can no longer connect.")
