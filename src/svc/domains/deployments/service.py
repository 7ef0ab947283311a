"""Deployment rules: a deployment row exists only once its artifact is stored; each upload is a new
version and goes live at once; rollback moves the live pointer only. Flush, never commit."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from svc.auth.roles import OrgAccess
from svc.domains.audit.service import record
from svc.domains.deployments import queries
from svc.domains.deployments.errors import DeploymentNotFound
from svc.domains.deployments.ingest import Received
from svc.domains.deployments.schemas import Deployment as DeploymentView
from svc.domains.deployments.schemas import GitInfo
from svc.domains.deployments.views import deployment_view
from svc.domains.projects import queries as project_queries
from svc.domains.projects.errors import OperationInFlight, ProjectNotFound
from svc.domains.projects.routing import bump_edge
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Deployment, Project


async def list_deployments(session: AsyncSession, project: Project, *, limit: int,
                           before: int | None) -> tuple[list[DeploymentView], str | None]:
    rows = await queries.page(session, project.id, limit=limit + 1, before=before)
    more = len(rows) > limit
    rows = rows[:limit]
    names = await queries.subjects(session, {r.uploader_id for r in rows if r.uploader_id})
    views = [deployment_view(r, live_id=project.live_deployment_id, uploader=names.get(r.uploader_id or ""))
             for r in rows]
    return views, (str(rows[-1].version) if more and rows else None)


async def _locked_project(session: AsyncSession, access: OrgAccess, project_name: str) -> Project:
    project = await project_queries.by_name(session, access.org.id, project_name, lock=True)
    if project is None:
        raise ProjectNotFound()
    if project.state != "active":
        raise OperationInFlight("The project is being deleted")
    return project


async def record_deployment(session: AsyncSession, access: OrgAccess, project_name: str, received: Received,
                            git: GitInfo) -> Deployment:
    """The new version, live at once. Call once the artifact is stored."""
    project = await _locked_project(session, access, project_name)
    version = project.next_version
    project.next_version = version + 1
    row = Deployment(
        id=new_id("dep"), project_id=project.id, version=version, digest=received.digest,
        size_bytes=received.size, unpacked_bytes=received.unpacked.unpacked_bytes,
        file_count=received.unpacked.file_count, manifest=received.unpacked.manifest, created_at=utcnow(),
        uploader_id=access.principal.user.id, git_commit=git.commit, git_message=git.message,
        git_branch=git.branch, git_dirty=git.dirty)
    session.add(row)
    project.live_deployment_id = row.id
    project.manifest = received.unpacked.manifest
    await bump_edge(session)
    await record(session, "deployment.create", actor=access.principal.user, org=access.org, target=project.name,
                 data={"version": version, "digest": received.digest})
    await session.flush()
    return row


async def rollback(session: AsyncSession, access: OrgAccess, project_name: str, version: int) -> Deployment:
    """Point the project at an existing version (older or newer); creates no deployment."""
    project = await _locked_project(session, access, project_name)
    row = await queries.by_version(session, project.id, version)
    if row is None:
        raise DeploymentNotFound(f"The project has no version {version}", details={"version": version})
    previous = await queries.by_id(session, project.live_deployment_id)
    project.live_deployment_id = row.id
    project.manifest = row.manifest
    await bump_edge(session)
    await record(session, "deployment.rollback", actor=access.principal.user, org=access.org,
                 target=project.name, data={"version": version, "from": previous.version if previous else None})
    await session.flush()
    return row


async def uploader_of(session: AsyncSession, row: Deployment) -> str | None:
    names = await queries.subjects(session, {row.uploader_id} if row.uploader_id else set())
    return names.get(row.uploader_id or "")


def view(row: Deployment, *, live: bool, uploader: str | None) -> DeploymentView:
    return deployment_view(row, live_id=row.id if live else None, uploader=uploader)
