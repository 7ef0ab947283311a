"""End-user auth's SQL on svc's store (svc.models.app_auth). The auth service on the project's
hosts reads a project's grant and providers through `grant` and `providers`."""

from __future__ import annotations

from sqlalchemy import delete, select, update

from svc.kit.store_session import StoreSession
from svc.models import AuthGrant, AuthProvider


async def grant(session: StoreSession, project_id: str, *, lock: bool = False,
                revoked: bool = False) -> AuthGrant | None:
    """The project's grant with its settings; None when never granted or revoked (`revoked`: the
    row of a revoked grant too). `lock`: held until the transaction ends."""
    found = select(AuthGrant).where(AuthGrant.project_id == project_id)
    row = (await session.scalars(found.with_for_update() if lock else found)).first()
    if row is not None and row.revoked_at is not None and not revoked:
        return None
    return row


async def providers(session: StoreSession, project_id: str) -> list[AuthProvider]:
    """The project's providers by name (client id and sealed secret: unseal with service.client_secret)."""
    return list((await session.scalars(select(AuthProvider).where(AuthProvider.project_id == project_id)
                                       .order_by(AuthProvider.name))).all())


async def provider(session: StoreSession, project_id: str, name: str) -> AuthProvider | None:
    return await session.get(AuthProvider, (project_id, name))


async def remove_provider(session: StoreSession, project_id: str, name: str) -> bool:
    result = await session.execute(delete(AuthProvider).where(AuthProvider.project_id == project_id,
                                                              AuthProvider.name == name))
    return bool(getattr(result, "rowcount", 0))


async def behind(session: StoreSession, version: int) -> list[str]:
    """The granted projects whose svc_auth schema is older than `version`."""
    return list((await session.scalars(select(AuthGrant.project_id).where(
        AuthGrant.revoked_at.is_(None), AuthGrant.schema_version < version))).all())


async def migrated(session: StoreSession, project_ids: list[str], version: int) -> None:
    await session.execute(update(AuthGrant).where(AuthGrant.project_id.in_(project_ids))
                          .values(schema_version=version))
