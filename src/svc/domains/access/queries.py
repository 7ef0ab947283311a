"""SQL of the access area: project secrets' hashes, one-time login codes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from svc.kit.store_session import StoreSession
from svc.models import AccessGrant, Hostname, Project


async def password_hash(session: StoreSession, project_id: str) -> str | None:
    return await session.scalar(select(Project.access_password_hash).where(Project.id == project_id))


async def bypass_hash(session: StoreSession, project_id: str) -> str | None:
    return await session.scalar(select(Project.bypass_secret_hash).where(Project.id == project_id))


async def add_grant(session: StoreSession, grant: AccessGrant, now: datetime) -> None:
    # Housekeeping: codes nobody exchanged are of no use once expired.
    await session.execute(delete(AccessGrant).where(AccessGrant.expires_at < now))
    session.add(grant)
    await session.flush()


async def take_grant(session: StoreSession, code_hash: str) -> AccessGrant | None:
    """Remove the grant and return it; None when unknown or when a concurrent exchange took it."""
    grant = await session.get(AccessGrant, code_hash)
    if grant is None:
        return None
    result: Any = await session.execute(delete(AccessGrant).where(AccessGrant.code_hash == code_hash))
    if result.rowcount != 1:
        return None
    return grant


async def delete_grants_of_project(session: StoreSession, project_id: str) -> None:
    hosts = select(Hostname.host).where(Hostname.project_id == project_id)
    await session.execute(delete(AccessGrant).where(AccessGrant.host.in_(hosts))
                          .execution_options(synchronize_session=False))
