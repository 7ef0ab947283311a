"""Deployment rules: a deployment row exists only once its artifact is stored; each upload is a new
version and goes live at once; rollback moves the live pointer only. Services receive the unit of
work and flush; the unit of work commits.

A deploy is READ_THEN_WRITE: the caller and project are checked on a read session; the body then
streams in (validated and unpacked as it arrives) with nothing of the store held, so a minute-long
upload never holds SQLite's write lock or an idle PostgreSQL transaction; the bundle goes to the
blob store; one short write transaction records the version. Once it committed the site moves
into place and this process's edge converges (the 201 means "live"); if it did not, the bundle it
added is collected after a grace period unless a deployment uses it by then (artifacts.py, jobs.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

from starlette.requests import ClientDisconnect

from svc.adapters.workers.port import WorkerCode
from svc.auth.projects import OperationInFlight, ProjectNotFound, project_by_name
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.deployments import artifacts, ingest, queries, worker_code
from svc.domains.deployments.bundle import bad, too_large
from svc.domains.deployments.errors import DeploymentNotFound, UnsupportedMediaType
from svc.domains.deployments.schemas import Deployment as DeploymentView
from svc.domains.deployments.schemas import GitInfo
from svc.domains.projects import service as projects
from svc.errors import ServiceUnavailable
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import Deployment, Project, ProjectState
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

BUNDLE_TYPES = ("application/gzip", "application/x-gzip", "application/octet-stream")
IDLE_SECONDS = 120


def check_upload(media_type: str, content_length: str | None, max_bytes: int) -> None:
    """Refuse an upload before reading its body: a type that is not a gzipped bundle (415), or a
    declared length over the bound (413)."""
    if media_type not in BUNDLE_TYPES:
        raise UnsupportedMediaType(details={"accepted": list(BUNDLE_TYPES)})
    if content_length is not None and content_length.strip().isdigit() and int(content_length) > max_bytes:
        raise too_large("compressed", max_bytes)


async def upload_chunks(stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """A request body (`request.stream()`) as it arrives, for `deploy`: the API's upload and the
    dashboard's use this one helper. A client that stops sending for IDLE_SECONDS is cut off, and
    one that goes away mid-body is a truncated bundle (never a half-read one taken as whole)."""
    chunks = stream.__aiter__()
    while True:
        try:
            async with asyncio.timeout(IDLE_SECONDS):
                chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        except ClientDisconnect:
            raise bad("truncated", "The upload ended before the body was complete") from None
        except TimeoutError:
            raise bad("truncated", f"The upload stalled: no data for {IDLE_SECONDS} s") from None
        yield chunk


@use_case(Tx.READ_THEN_WRITE)  # the body streams in with nothing of the store held
async def deploy(uow: UnitOfWork, access: OrgAccess, project: Project, body: AsyncIterator[bytes],
                 git: GitInfo) -> DeploymentView:
    """A new version from an upload, live once this returns and its unit of work committed."""
    ctx = uow.ctx
    if project.state != ProjectState.active:
        raise OperationInFlight("The project is being deleted")
    await uow.close_reads()
    received = await ingest.receive(ctx, body)
    uow.after_rollback(received.discard)
    # A worker that cannot run is refused before anything is kept (the live version keeps serving).
    worker = await worker_code.check_bundle(ctx, received.staging, received.unpacked.manifest, received.unpacked.files)
    try:
        added = await artifacts.keep_bundle(ctx, received.digest, received.bundle)
    except Exception as e:
        raise ServiceUnavailable("The artifact store is not available; try again") from e
    if added:
        uow.after_rollback(partial(artifacts.collect_later, ctx, received.digest))
    await uow.begin_write()
    row = await _record(uow, access, project.name, received, git, worker.as_row() if worker else None)
    # In this order after the commit: the site in place, then the edge serving it, then clean-up.
    uow.after_commit(partial(artifacts.publish_site, ctx, received.digest, received.bundle, received.staging,
                             received.unpacked.files))
    await projects.edge_changed(uow, row.project_id)
    uow.after_commit(received.discard)
    return DeploymentView.of(row, live_id=row.id, uploader=access.principal.user.subject)


async def _locked_project(session: StoreSession, access: OrgAccess, project_name: str) -> Project:
    project = await project_by_name(session, access.org.id, project_name, lock=True)
    if project is None:
        raise ProjectNotFound()
    if project.state != ProjectState.active:
        raise OperationInFlight("The project is being deleted")
    return project


async def _record(uow: UnitOfWork, access: OrgAccess, project_name: str, received: ingest.Received,
                  git: GitInfo, worker: dict[str, str] | None) -> Deployment:
    session = uow.session
    project = await _locked_project(session, access, project_name)
    version = project.next_version
    project.next_version = version + 1
    row = Deployment(
        id=new_id("dep"), project_id=project.id, version=version, digest=received.digest,
        size_bytes=received.size, unpacked_bytes=received.unpacked.unpacked_bytes,
        file_count=received.unpacked.file_count, manifest=received.unpacked.manifest, created_at=utcnow(),
        uploader_id=access.principal.user.id, git_commit=git.commit, git_message=git.message,
        git_branch=git.branch, git_dirty=git.dirty, worker=worker)
    session.add(row)
    project.live_deployment_id = row.id
    project.manifest = received.unpacked.manifest
    await record(session, "deployment.create", actor=access.principal.user, org=access.org, target=project.name,
                 data={"version": version, "digest": received.digest})
    await session.flush()
    return row


async def rollback(uow: UnitOfWork, access: OrgAccess, project_name: str, version: int) -> DeploymentView:
    """Point the project at an existing version (older or newer); creates no deployment."""
    session = uow.session
    project = await _locked_project(session, access, project_name)
    row = await queries.by_version(session, project.id, version)
    if row is None:
        raise DeploymentNotFound(f"The project has no version {version}", details={"version": version})
    previous = await queries.by_id(session, project.live_deployment_id)
    project.live_deployment_id = row.id
    project.manifest = row.manifest
    await projects.edge_changed(uow, project.id)
    await record(session, "deployment.rollback", actor=access.principal.user, org=access.org,
                 target=project.name, data={"version": version, "from": previous.version if previous else None})
    await session.flush()
    [view] = await projects.deployment_views(session, [row], live_id=row.id)
    return view


async def deployment_by_id(session: StoreSession, deployment_id: str) -> Deployment | None:
    return await queries.by_id(session, deployment_id)


async def worker_of(ctx: AppContext, row: Deployment) -> tuple[Path, WorkerCode]:
    """The unpacked site of a deployment that has a worker, and the worker's code read from it
    (what the runtime loads; the workers area)."""
    assert row.worker is not None
    site = await site_of(ctx, row.digest)
    code = await asyncio.to_thread(worker_code.read_code, site, worker_code.WorkerSpec.of_row(row.worker))
    return site, code


async def site_of(ctx: AppContext, digest: str) -> Path:
    """The unpacked site of a live digest in this process's data dir (for the edge), fetched and
    unpacked from the blob store when missing."""
    return await artifacts.ensure_site(ctx, digest)


def sweep_partials(ctx: AppContext) -> int:
    """At start (blocking): what a killed process left half-done, never visible, is removed."""
    return artifacts.sweep_partials(ctx)


async def remove_artifacts(ctx: AppContext, project_id: str, digests: list[str]) -> None:
    """For a project's teardown (outside any transaction): remove each artifact's site and bundle,
    asking again just before each one whether another project's deployment has come to use it
    meanwhile (the list was read before the removals began)."""
    for digest in digests:
        async with unit_of_work(ctx, Tx.READ) as uow:
            if await queries.digest_used(uow.session, digest, besides=project_id):
                continue
        await artifacts.remove_artifact(ctx, digest)


async def unshared_digests(uow: UnitOfWork, project_id: str) -> list[str]:
    """The project's artifacts that no other project's deployment uses (what its teardown removes)."""
    return await queries.unshared_digests(uow.session, project_id)
