"""Repository rules: create (a row only), list, get, update, soft delete, ref history, browsing.
Services flush, never commit.

A repository lives on the git node by its id, so a rename is a row change only and a push in flight
goes on. Delete hides it at once (every lookup skips deleted rows) and the purge cycle removes the
disk copy after the retention period (jobs.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar
from urllib.parse import urlsplit

from sqlalchemy.exc import IntegrityError

from svc.adapters.git import port
from svc.adapters.git.settings import GitSettings
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.repos import errors, queries, schemas
from svc.domains.repos.settings import RepoSettings
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Org, Project, Repo, RepoVisibility
from svc.uow import Tx, UnitOfWork, use_case

T = TypeVar("T")


def node_of(ctx: AppContext) -> port.GitNode:
    node = ctx.adapters.git
    if node is None:
        raise errors.GitUnavailable(ctx.adapters.off.get("git") or errors.GitUnavailable.default_message)
    return node


def clone_url(ctx: AppContext, org: Org, project: Project, repo: Repo) -> str:
    return f"{ctx.settings.public_url.rstrip('/')}/git/{org.slug}/{project.name}/{repo.name}.git"


def ssh_url(ctx: AppContext, org: Org, project: Project, repo: Repo) -> str | None:
    node = ctx.adapters.git
    if node is None or not node.ssh_port:
        return None
    host = ctx.settings_of(GitSettings).ssh_public_host or urlsplit(ctx.settings.public_url).hostname or "localhost"
    return f"ssh://git@{host}:{node.ssh_port}/{org.slug}/{project.name}/{repo.name}.git"


def view(ctx: AppContext, org: Org, project: Project, repo: Repo) -> schemas.Repo:
    return schemas.Repo(name=repo.name, visibility=repo.visibility, default_branch=repo.default_branch,
                        clone_url=clone_url(ctx, org, project, repo), ssh_url=ssh_url(ctx, org, project, repo),
                        created_at=repo.created_at)


async def list_repos(uow: UnitOfWork, project: Project) -> list[Repo]:
    return await queries.live_repos(uow.session, project.id)


async def get_repo(uow: UnitOfWork, project: Project, name: str) -> Repo:
    repo = await queries.repo_by_name(uow.session, project.id, name)
    if repo is None:
        raise errors.RepoNotFound(details={"repo": name})
    return repo


async def create_repo(uow: UnitOfWork, access: OrgAccess, project: Project, body: schemas.RepoCreate) -> Repo:
    """A row only: the bare repository is made on the first git access (the node's ensure)."""
    session = uow.session
    if await queries.repo_by_name(session, project.id, body.name) is not None:
        raise errors.RepoExists(details={"repo": body.name})
    repo = Repo(id=new_id("repo"), org_id=access.org.id, project_id=project.id, name=body.name,
                visibility=RepoVisibility(body.visibility), default_branch=body.default_branch,
                created_by=access.principal.user.id, created_at=utcnow(), deleted_at=None)
    await queries.take_name(session, project.id, repo.name)
    await _flush_unique(uow, repo, body.name, add=True)
    await record(session, "repo.create", actor=access.principal.user, org=access.org,
                 target=f"{project.name}/{repo.name}",
                 data={"project": project.name, "repo": repo.name, "visibility": repo.visibility})
    return repo


async def update_repo(uow: UnitOfWork, access: OrgAccess, project: Project, name: str,
                      body: schemas.RepoUpdate) -> Repo:
    session = uow.session
    repo = await queries.repo_by_name(session, project.id, name, lock=True)
    if repo is None:
        raise errors.RepoNotFound(details={"repo": name})
    changed: dict[str, str] = {}
    if body.name is not None and body.name != repo.name:
        if await queries.repo_by_name(session, project.id, body.name) is not None:
            raise errors.RepoExists(details={"repo": body.name})
        changed["name"] = body.name
        # The old name keeps reaching the repository over git (a push straddling the rename goes on).
        await queries.take_name(session, project.id, body.name)
        await queries.redirect_name(session, project.id, repo.name, repo.id, utcnow())
        repo.name = body.name
    if body.visibility is not None and body.visibility != repo.visibility:
        changed["visibility"] = repo.visibility = body.visibility
    if body.default_branch is not None and body.default_branch != repo.default_branch:
        changed["defaultBranch"] = repo.default_branch = body.default_branch
        node = node_of(uow.ctx)
        repo_id, branch = repo.id, body.default_branch
        uow.after_commit(lambda: node.set_default_branch(repo_id, branch))
    if changed:
        await _flush_unique(uow, repo, repo.name, add=False)
        await record(session, "repo.update", actor=access.principal.user, org=access.org,
                     target=f"{project.name}/{repo.name}",
                     data={"project": project.name, "repo": name, "changed": changed})
    return repo


async def delete_repo(uow: UnitOfWork, access: OrgAccess, project: Project, name: str) -> None:
    session = uow.session
    repo = await queries.repo_by_name(session, project.id, name, lock=True)
    if repo is None:
        raise errors.RepoNotFound(details={"repo": name})
    repo.deleted_at = utcnow()
    await session.flush()
    await record(session, "repo.delete", actor=access.principal.user, org=access.org,
                 target=f"{project.name}/{repo.name}", data={"project": project.name, "repo": repo.name})


async def _flush_unique(uow: UnitOfWork, repo: Repo, name: str, *, add: bool) -> None:
    """Another request took the name between the check and the write: repo_exists, not a 500."""
    try:
        async with uow.session.begin_nested():
            if add:
                uow.session.add(repo)
            await uow.session.flush()
    except IntegrityError:
        raise errors.RepoExists(details={"repo": name}) from None


async def ref_updates(uow: UnitOfWork, project: Project, name: str) -> list[schemas.RefUpdate]:
    repo = await get_repo(uow, project, name)
    return [schemas.RefUpdate(ref=u.ref, old=u.old, new=u.new, pusher=u.pusher, at=u.at, transport=u.transport,
                              deployment=None if d is None else schemas.DeploymentLink(id=d.id, version=d.version))
            for u, d in await queries.ref_updates(uow.session, repo.id)]


# --- browsing: the store is read, then let go, before the node is asked ---

async def _on_node(uow: UnitOfWork, project: Project, name: str,
                   ask: Callable[[port.GitNode, Repo], Awaitable[T]]) -> T:
    node = node_of(uow.ctx)
    repo = await get_repo(uow, project, name)
    await uow.close_reads()
    try:
        return await ask(node, repo)
    except port.NoRef:
        raise errors.NoRef() from None
    except port.NoPath:
        raise errors.NoPath() from None
    except port.GitUnavailable as exc:
        raise errors.GitUnavailable(str(exc)) from None
    except port.GitUnreachable as exc:
        raise errors.GitUnreachable(str(exc)) from None


@use_case(Tx.READ)
async def refs(uow: UnitOfWork, project: Project, name: str) -> schemas.RepoRefs:
    found = await _on_node(uow, project, name, lambda node, repo: node.refs(repo.id))
    return schemas.RepoRefs(refs=[schemas.RepoRef(name=r.name, commit=r.commit) for r in found])


@use_case(Tx.READ)
async def tree(uow: UnitOfWork, project: Project, name: str, ref: str | None, path: str) -> schemas.RepoTree:
    found = await _on_node(uow, project, name, lambda node, repo: node.tree(repo.id, ref or repo.default_branch, path))
    return schemas.RepoTree(entries=[schemas.TreeEntry(name=e.name, path=e.path, type=e.type, size=e.size)
                                     for e in found.entries], truncated=found.truncated)


@use_case(Tx.READ)
async def blob(uow: UnitOfWork, project: Project, name: str, ref: str | None, path: str) -> schemas.RepoBlob:
    found = await _on_node(uow, project, name, lambda node, repo: node.blob(repo.id, ref or repo.default_branch, path))
    return schemas.RepoBlob(path=found.path, size=found.size, binary=found.binary, too_large=found.too_large,
                            content=found.content)


@use_case(Tx.READ)
async def commits(uow: UnitOfWork, project: Project, name: str, ref: str | None, limit: int) -> schemas.RepoCommits:
    found = await _on_node(uow, project, name,
                           lambda node, repo: node.commits(repo.id, ref or repo.default_branch, limit))
    return schemas.RepoCommits(commits=[schemas.RepoCommit(id=c.id, message=c.message, author=c.author, at=c.at)
                                        for c in found])


def retention(ctx: AppContext) -> timedelta:
    return timedelta(days=ctx.settings_of(RepoSettings).repo_retention_days)


async def project_repo_ids(uow: UnitOfWork, project_id: str) -> list[str]:
    """Every repository of a project, deleted ones too (its teardown removes their disk copies)."""
    return await queries.all_repo_ids(uow.session, project_id)


async def remove_disk_copies(ctx: AppContext, repo_ids: list[str]) -> None:
    """A project teardown's files phase: safe to run twice (a missing copy is nothing to remove)."""
    node = ctx.adapters.git
    if node is not None:
        for repo_id in repo_ids:
            await node.remove(repo_id)
