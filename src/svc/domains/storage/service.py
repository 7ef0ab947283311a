"""Object storage rules (spec "Object storage"; docs/storage.md). Services flush, never commit.

A project granted storage keeps objects under its prefix `p/{projectId}/` in the object store
(fixed at the first grant, never user-set, never changed), within its org's plan's quota. A
revoke keeps the objects (and the grant's row, marked revoked: a grant again finds the same
prefix and what its objects use). The objects themselves are objects.py's."""

from __future__ import annotations

from collections.abc import AsyncIterable

from svc.adapters.objects.port import ObjectInfo
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.domains.storage import objects, queries, schemas
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import Org, Project, StorageGrant
from svc.uow import Tx, UnitOfWork, use_case


def unavailable(ctx: AppContext) -> str | None:
    """Why this svc cannot grant storage now, in `svc serve`'s words (None: it can)."""
    if ctx.adapters.objects is not None:
        return None
    return ctx.adapters.off.get("objects") or "no object store"


def _status(uow: UnitOfWork, org: Org, project: Project, grant: StorageGrant | None) -> schemas.StorageStatus:
    """Filled without a grant too: the prefix a grant would fix (it is the project's id, so the
    same one), the plan's quota, and what objects a revoked grant kept use."""
    granted = grant is not None and grant.revoked_at is None
    return schemas.StorageStatus(
        granted=granted, prefix=grant.prefix if grant is not None else objects.prefix_for(project.id),
        quota_bytes=orgs.limits_of(uow.ctx.config, org.plan).storage_bytes,
        used_bytes=grant.used_bytes if grant is not None else 0)


async def status(uow: UnitOfWork, org: Org, project: Project) -> schemas.StorageStatus:
    objects.store(uow.ctx)
    return _status(uow, org, project, await queries.grant(uow.session, project.id))


@use_case(Tx.WRITE)
async def grant(uow: UnitOfWork, access: OrgAccess, project: Project) -> schemas.StorageStatus:
    """Idempotent: a granted project keeps its prefix. The worker finds env.storage at its next
    request (no redeploy)."""
    objects.store(uow.ctx)
    row = await queries.grant(uow.session, project.id, lock=True)
    if row is None or row.revoked_at is not None:
        if row is None:
            row = StorageGrant(project_id=project.id, prefix=objects.prefix_for(project.id), used_bytes=0,
                               created_at=utcnow())
            uow.session.add(row)
        row.revoked_at = None
        row.granted_by = access.principal.user.id if access.principal.user else None
        await uow.session.flush()
        await record(uow.session, "storage.grant", actor=access.principal.user, org=access.org, target=project.name,
                     data={"prefix": row.prefix})
        await projects.bindings_changed(uow, project.id)
    return _status(uow, access.org, project, row)


@use_case(Tx.WRITE)
async def revoke(uow: UnitOfWork, access: OrgAccess, project: Project) -> None:
    """Idempotent (204 when not granted); the objects are kept. Writes in flight finish."""
    objects.store(uow.ctx)
    row = await queries.grant(uow.session, project.id, lock=True)
    if row is not None and row.revoked_at is None:
        row.revoked_at = utcnow()
        await uow.session.flush()
        await record(uow.session, "storage.revoke", actor=access.principal.user, org=access.org, target=project.name)
        await projects.bindings_changed(uow, project.id)


async def has_grant(session: StoreSession, project: Project) -> bool:
    """Whether the project is granted storage (the area's manifest declares it: the Overview)."""
    row = await queries.grant(session, project.id)
    return row is not None and row.revoked_at is None


# The objects routes' use cases: each a read of the route's own (who may, which project), given
# back before the object store is reached; objects.py opens the short writes it needs itself, so a
# long upload holds nothing of the store.

@use_case(Tx.READ)
async def upload(uow: UnitOfWork, project: Project, key: str, chunks: AsyncIterable[bytes], *, length: int,
                 content_type: str | None) -> ObjectInfo:
    await uow.close_reads()
    return await objects.put(uow.ctx, project.id, key, chunks, length=length, content_type=content_type)


@use_case(Tx.READ)
async def remove(uow: UnitOfWork, project: Project, key: str) -> None:
    await uow.close_reads()
    await objects.delete(uow.ctx, project.id, key)
