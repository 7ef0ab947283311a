"""Repositories: a project's git repositories in the dashboard (docs/repos.md).

- The list: each repository's visibility, default branch and clone URLs (HTTPS, and SSH when this
  svc runs an SSH server) to copy; "Create a repository" for members, refused next to its fields;
  with none yet, how to push a first one.
- A repository: its clone URLs, how to push to it, a branch or tag to look at, the tree at its root,
  links to its commits and its ref history; its settings (rename, visibility, default branch) and
  delete (its name typed) for admins.
- A tree at a path (breadcrumbs, sub-trees and files), a file highlighted by Pygments (binary and
  over-1-MiB files said, not shown), the commits of a ref (newest first, up to 200), and the ref
  history (each push's old and new commit, the pusher, the deployment it made).

Every page calls the service function the API route calls, with the API's roles: viewers look,
members create, admins change and delete. An unknown ref or path is the app's 404 page (the
service's no_ref / no_path, not caught here)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import Path, Query, Request, Response
from fastapi.responses import RedirectResponse

from svc.adapters.git.port import BLOB_LIMIT, COMMITS_LIMIT, TREE_LIMIT
from svc.auth.projects import ProjectAccess
from svc.auth.roles import at_least
from svc.context import AppContext
from svc.deps import Ctx, Uow
from svc.domains.repos import errors, highlight, schemas, service
from svc.errors import AppError, BadRequest
from svc.models import Role
from svc.uow import UnitOfWork, runs
from svc.web import render
from svc.web.deps import ProjectAdmin, ProjectMember, ProjectViewer
from svc.web.forms import fields, parse, refusable, refusal, refused
from svc.web.routing import page_router
from svc.web.words import say

router = page_router()

REPOS = "/orgs/{orgSlug}/projects/{projectName}/repos"
ONE = REPOS + "/{repoName}"
# The API's bounds: the rules of a name are the service's.
RepoNamePath = Annotated[str, Path(alias="repoName", min_length=1, max_length=100)]
RefQuery = Annotated[str | None, Query(max_length=255)]
PathQuery = Annotated[str, Query(max_length=4096)]

# The forms' fields, as their labels say them ("name must ..." is said "Name must ...").
FIELDS = {"name": "Name", "visibility": "Visibility", "defaultBranch": "Default branch"}
ZERO = "0" * 40  # a ref-update's old (created) or new (deleted) side


# --- addresses ---

def _list_url(p: ProjectAccess) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/repos"


def _repo_url(p: ProjectAccess, name: str) -> str:
    return f"{_list_url(p)}/{quote(name, safe='')}"


def _git_base(p: ProjectAccess, ctx: AppContext) -> str:
    """Where the project's repositories are cloned from, a name and ".git" short (service.clone_url's form)."""
    return f"{ctx.settings.public_url.rstrip('/')}/git/{p.access.org.slug}/{p.project.name}/"


def _link(base: str, **query: str | None) -> str:
    """`base` with the query's given values (a ref left out is the default branch)."""
    given = {k: v for k, v in query.items() if v}
    return f"{base}?{urlencode(given)}" if given else base


# --- what the pages show ---

def _values(p: ProjectAccess) -> dict[str, Any]:
    role = p.access.role
    return {"project": p.project.name, "list_url": _list_url(p), "role": role.value, "size": human_size,
            "can_create": at_least(role, Role.member), "can_admin": at_least(role, Role.admin),
            "tree_limit": TREE_LIMIT, "blob_limit_mib": BLOB_LIMIT // (1024 * 1024)}


def _short(name: str, all_names: list[str]) -> str:
    """"refs/heads/main" -> "main", unless a tag has that name too (git would take the tag)."""
    short = name.removeprefix("refs/heads/").removeprefix("refs/tags/")
    clash = sum(1 for other in all_names if other.removeprefix("refs/heads/").removeprefix("refs/tags/") == short)
    return short if clash == 1 else name


def _switcher(refs: schemas.RepoRefs, current: str) -> dict[str, Any]:
    """The branches and tags to pick from, `current` selected (a commit id typed in the address too)."""
    names = [r.name for r in refs.refs]
    options = [{"value": _short(r.name, names), "label": _short(r.name, names),
                "group": "Tags" if r.name.startswith("refs/tags/") else "Branches"} for r in refs.refs]
    if current not in {o["value"] for o in options}:
        options.insert(0, {"value": current, "label": current, "group": "Branches"})
    return {"options": options, "current": current}


def _crumbs(repo_url: str, ref: str | None, path: str) -> list[dict[str, str]]:
    """The path's folders, each a link to its tree; the last one (the page itself) has no link."""
    parts = [part for part in path.strip("/").split("/") if part]
    return [{"name": part, "url": _link(repo_url + "/tree", ref=ref, path="/".join(parts[:i + 1]))}
            for i, part in enumerate(parts)]


def _entries(repo_url: str, ref: str | None, tree: schemas.RepoTree) -> list[dict[str, Any]]:
    """Folders first, then files, each by name; each a link to its tree or its file."""
    ordered = sorted(tree.entries, key=lambda e: (e.type != "tree", e.name.lower()))
    return [{"name": e.name, "type": e.type, "size": e.size,
             "url": _link(f"{repo_url}/{'tree' if e.type == 'tree' else 'blob'}", ref=ref, path=e.path)}
            for e in ordered]


def human_size(n: int | None) -> str:
    """Bytes for a person: 512 B, 14.2 KB, 3.1 MB."""
    if n is None:
        return ""
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _when(at: str) -> datetime | str:
    """A commit's ISO 8601 date as a datetime for the `ago` filter (as git wrote it, if it is not one)."""
    try:
        return datetime.fromisoformat(at)
    except ValueError:
        return at


async def _repo(p: ProjectAccess, uow: UnitOfWork, ctx: AppContext, name: str) -> dict[str, Any]:
    """The repository as the API shows it, and the addresses of its pages."""
    repo = await service.get_repo(uow, p.project, name)
    view = service.view(ctx, p.access.org, p.project, repo)
    url = _repo_url(p, view.name)
    return {"repo": view, "repo_url": url, "commits_url": url + "/commits", "history_url": url + "/history"}


async def _browse(request: Request, p: ProjectAccess, uow: UnitOfWork, name: str, repo_url: str, ref: str | None,
                  default_branch: str) -> dict[str, Any]:
    """The repository page's browser: the refs to pick from and the tree at the root of `ref` (the
    default branch). An empty repository, a default branch not pushed yet, or a git node that is
    off or did not answer is said on the page, which shows the clone URLs and settings anyway."""
    try:
        refs = await service.refs(uow, p.project, name)
    except (errors.GitUnavailable, errors.GitUnreachable) as err:
        return {"node_said": say(err, render.dashboard_of(request).hints)}
    if not refs.refs:
        return {"empty": True}
    current = ref or default_branch
    branches = {r.name.removeprefix("refs/heads/") for r in refs.refs if r.name.startswith("refs/heads/")}
    values: dict[str, Any] = {"switcher": _switcher(refs, current), "current_ref": current}
    if ref is None and default_branch not in branches:
        return {**values, "no_default": True}
    listing = await service.tree(uow, p.project, name, ref, "")  # an unknown ref: the app's 404 page
    return {**values, "entries": _entries(repo_url, ref, listing), "truncated": listing.truncated}


async def _list_page(request: Request, p: ProjectAccess, uow: UnitOfWork, ctx: AppContext, *, status: int = 200,
                     **extra: Any) -> Response:
    rows = [service.view(ctx, p.access.org, p.project, r) for r in await service.list_repos(uow, p.project)]
    return await render.render(request, "repos/list.html", status=status, title=f"{p.project.name}: repositories",
                               rows=[{"repo": r, "url": _repo_url(p, r.name)} for r in rows],
                               tokens_url="/account/tokens", git_base=_git_base(p, ctx), **_values(p), **extra)


async def _repo_page(request: Request, p: ProjectAccess, uow: UnitOfWork, ctx: AppContext, name: str, ref: str | None,
                     *, status: int = 200, **extra: Any) -> Response:
    shown = await _repo(p, uow, ctx, name)
    repo: schemas.Repo = shown["repo"]
    browse = await _browse(request, p, uow, name, shown["repo_url"], ref, repo.default_branch)
    return await render.render(request, "repos/repo.html", status=status, title=f"{p.project.name}/{repo.name}",
                               **shown, **browse, ref=ref, retention_days=service.retention(ctx).days,
                               **_values(p), **extra)


# --- the pages ---

@router.get(REPOS)
async def repo_list(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx) -> Response:
    return await _list_page(request, p, uow, ctx)


@router.get(ONE)
@runs(service.tree)
async def repo_page(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx, name: RepoNamePath,
                    ref: RefQuery = None) -> Response:
    return await _repo_page(request, p, uow, ctx, name, ref or None)


@router.get(ONE + "/tree")
@runs(service.tree)
async def tree_page(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx, name: RepoNamePath,
                    ref: RefQuery = None, path: PathQuery = "") -> Response:
    ref = ref or None
    if not path.strip("/"):  # the root is the repository's own page
        return RedirectResponse(_link(_repo_url(p, name), ref=ref), status_code=303)
    shown = await _repo(p, uow, ctx, name)
    refs = await service.refs(uow, p.project, name)
    listing = await service.tree(uow, p.project, name, ref, path)
    current = ref or shown["repo"].default_branch
    return await render.render(request, "repos/tree.html", title=f"{shown['repo'].name}/{path.strip('/')}", **shown,
                               ref=ref, current_ref=current, path=path.strip("/"), switcher=_switcher(refs, current),
                               crumbs=_crumbs(shown["repo_url"], ref, path),
                               entries=_entries(shown["repo_url"], ref, listing), truncated=listing.truncated,
                               **_values(p))


@router.get(ONE + "/blob")
@runs(service.blob)
async def blob_page(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx, name: RepoNamePath,
                    path: Annotated[str, Query(min_length=1, max_length=4096)], ref: RefQuery = None) -> Response:
    ref = ref or None
    shown = await _repo(p, uow, ctx, name)
    blob = await service.blob(uow, p.project, name, ref, path)
    code = None
    if blob.content is not None and not blob.binary and not blob.too_large:
        code = await highlight.highlighted(blob.path, blob.content)
    return await render.render(request, "repos/blob.html", title=f"{shown['repo'].name}/{blob.path}", **shown,
                               ref=ref, current_ref=ref or shown["repo"].default_branch, blob=blob, code=code,
                               language=highlight.language(blob.path), blob_size=human_size(blob.size),
                               crumbs=_crumbs(shown["repo_url"], ref, blob.path), **_values(p))


@router.get(ONE + "/commits")
@runs(service.commits)
async def commits_page(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx, name: RepoNamePath,
                       ref: RefQuery = None) -> Response:
    ref = ref or None
    shown = await _repo(p, uow, ctx, name)
    refs = await service.refs(uow, p.project, name)
    found = await service.commits(uow, p.project, name, ref, COMMITS_LIMIT)
    current = ref or shown["repo"].default_branch
    rows = [{"commit": c, "at": _when(c.at), "url": _link(shown["repo_url"], ref=c.id)} for c in found.commits]
    return await render.render(request, "repos/commits.html", title=f"{shown['repo'].name}: commits", **shown,
                               ref=ref, current_ref=current, switcher=_switcher(refs, current), rows=rows,
                               limit=COMMITS_LIMIT, **_values(p))


@router.get(ONE + "/history")
async def history_page(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx, name: RepoNamePath) -> Response:
    shown = await _repo(p, uow, ctx, name)
    updates = await service.ref_updates(uow, p.project, name)
    names = [u.ref for u in updates]
    rows = [{"u": u, "ref": _short(u.ref, list(dict.fromkeys(names))), "created": u.old == ZERO,
             "deleted": u.new == ZERO, "new_url": _link(shown["repo_url"], ref=u.new)} for u in updates]
    deployments = f"/orgs/{p.access.org.slug}/projects/{p.project.name}/deployments"
    return await render.render(request, "repos/history.html", title=f"{shown['repo'].name}: ref history", **shown,
                               rows=rows, deployments_url=deployments, **_values(p))


# --- changes ---

@router.post(REPOS)
async def create_repo(request: Request, p: ProjectMember, uow: Uow, ctx: Ctx) -> Response:
    form = await fields(request)
    typed = {"name": form.get("name", ""), "visibility": form.get("visibility", "private"),
             "defaultBranch": form.get("defaultBranch", "")}
    try:
        body = parse(schemas.RepoCreate, {k: v for k, v in typed.items() if v or k == "name"})
        async with refusable(uow):  # a savepoint: a refused name leaves nothing behind
            repo = await service.create_repo(uow, p.access, p.project, body)
    except AppError as err:
        # Next to its field: a name or branch git would not take, a name already taken (with its hint).
        problem = refusal(request, err, fields=FIELDS, at={errors.RepoExists.code: "name"})

        async def show(reading: UnitOfWork) -> Response:
            if render.is_htmx(request):
                return await render.render_part(request, "repos/_create.html", status=problem.status, typed=typed,
                                                refusal=problem, **_values(p))
            return await _list_page(request, p, reading, ctx, status=problem.status, typed=typed, refusal=problem)
        return refused(problem, show)
    return render.redirect(request, _repo_url(p, repo.name),
                           flash=f"Repository {repo.name} created: push to it to fill it.")


@router.post(ONE + "/settings")
async def update_repo(request: Request, p: ProjectAdmin, uow: Uow, ctx: Ctx, name: RepoNamePath) -> Response:
    form = await fields(request)
    typed = {"name": form.get("name", ""), "visibility": form.get("visibility", ""),
             "defaultBranch": form.get("defaultBranch", "")}
    try:
        # What is sent as it stands is no change (the service changes what differs, and records that).
        body = parse(schemas.RepoUpdate, {k: v for k, v in typed.items() if v})
        async with refusable(uow):
            repo = await service.update_repo(uow, p.access, p.project, name, body)
    except AppError as err:
        if isinstance(err, errors.RepoNotFound):
            raise  # gone meanwhile: not about the form
        problem = refusal(request, err, fields=FIELDS, at={errors.RepoExists.code: "name"})

        async def show(reading: UnitOfWork) -> Response:
            if render.is_htmx(request):
                shown = await _repo(p, reading, ctx, name)
                return await render.render_part(request, "repos/_settings.html", status=problem.status, typed=typed,
                                                refusal=problem, **shown, **_values(p))
            return await _repo_page(request, p, reading, ctx, name, None, status=problem.status, typed=typed,
                                    refusal=problem)
        return refused(problem, show)
    said = (f"Renamed to {repo.name}: git remotes with the old name keep working." if repo.name != name
            else f"Repository {repo.name} saved.")
    return render.redirect(request, _repo_url(p, repo.name), flash=said)


@router.post(ONE + "/delete")
async def delete_repo(request: Request, p: ProjectAdmin, uow: Uow, ctx: Ctx, name: RepoNamePath) -> Response:
    """The API's DELETE has no confirmation; the page asks for the name typed, as for a project."""
    typed = (await fields(request)).get("confirm", "").strip()
    if typed != name:
        raise BadRequest(f"Type the repository's name, {name}, to confirm", details={"errors": [
            {"field": "confirm", "reason": "value_error", "message": "confirm must equal the repository's name"}]})
    await service.delete_repo(uow, p.access, p.project, name)
    days = service.retention(ctx).days
    return render.redirect(request, _list_url(p),
                           flash=f"Repository {name} deleted: its URLs stop answering at once; its files are "
                                 f"removed from disk after {days} days.")
