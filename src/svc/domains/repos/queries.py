"""SQL of the repos area, each taking a StoreSession."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select

from svc.kit.store_session import StoreSession
from svc.models import Deployment, RefUpdate, Repo, RepoRedirect

REF_UPDATES_LISTED = 200


async def live_repos(session: StoreSession, project_id: str) -> list[Repo]:
    stmt = (select(Repo).where(Repo.project_id == project_id, Repo.deleted_at.is_(None)).order_by(Repo.name))
    return list(await session.scalars(stmt))


async def repo_by_name(session: StoreSession, project_id: str, name: str, *, lock: bool = False) -> Repo | None:
    stmt = select(Repo).where(Repo.project_id == project_id, Repo.name == name, Repo.deleted_at.is_(None))
    if lock:
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt)).first()


async def repo_by_id(session: StoreSession, repo_id: str) -> Repo | None:
    return await session.get(Repo, repo_id)


async def all_repo_ids(session: StoreSession, project_id: str) -> list[str]:
    """Deleted ones too: a project's teardown removes every disk copy."""
    return list(await session.scalars(select(Repo.id).where(Repo.project_id == project_id)))


async def org_repo_ids(session: StoreSession, org_id: str) -> list[str]:
    """Deleted ones too, until purged: their disk copies count against the org's quota."""
    return list(await session.scalars(select(Repo.id).where(Repo.org_id == org_id)))


async def purgeable(session: StoreSession, deleted_before: datetime, limit: int) -> list[Repo]:
    stmt = (select(Repo).where(Repo.deleted_at.is_not(None), Repo.deleted_at < deleted_before)
            .order_by(Repo.deleted_at).limit(limit))
    return list(await session.scalars(stmt))


async def ref_updates(session: StoreSession, repo_id: str) -> list[tuple[RefUpdate, Deployment | None]]:
    stmt = (select(RefUpdate, Deployment).outerjoin(Deployment, Deployment.id == RefUpdate.deployment_id)
            .where(RefUpdate.repo_id == repo_id).order_by(RefUpdate.id.desc()).limit(REF_UPDATES_LISTED))
    return [(row[0], row[1]) for row in (await session.execute(stmt)).all()]


async def repo_by_git_name(session: StoreSession, project_id: str, name: str) -> Repo | None:
    """The repository of that name, else the one that had it before a rename (git URLs only)."""
    repo = await repo_by_name(session, project_id, name)
    if repo is not None:
        return repo
    stmt = (select(Repo).join(RepoRedirect, RepoRedirect.repo_id == Repo.id)
            .where(RepoRedirect.project_id == project_id, RepoRedirect.name == name, Repo.deleted_at.is_(None)))
    return (await session.scalars(stmt)).first()


async def take_name(session: StoreSession, project_id: str, name: str) -> None:
    """A repository now has this name: a redirect of it goes."""
    await session.execute(delete(RepoRedirect).where(RepoRedirect.project_id == project_id,
                                                     RepoRedirect.name == name))


async def redirect_name(session: StoreSession, project_id: str, name: str, repo_id: str, at: datetime) -> None:
    await take_name(session, project_id, name)
    session.add(RepoRedirect(project_id=project_id, name=name, repo_id=repo_id, created_at=at))


async def forget_deleted(session: StoreSession, repo_id: str) -> None:
    """A purged repository's row (its history and former names go with it, by cascade)."""
    await session.execute(delete(Repo).where(Repo.id == repo_id, Repo.deleted_at.is_not(None)))
