"""SQL for operations."""

from __future__ import annotations

from sqlalchemy import select

from svc.kit.store_session import StoreSession
from svc.models import Operation


async def by_id(session: StoreSession, op_id: str, *, lock: bool = False) -> Operation | None:
    return await session.get(Operation, op_id, with_for_update=lock)


async def running_projects(session: StoreSession) -> set[str]:
    return {key for key in (await session.scalars(
        select(Operation.running_key).where(Operation.running_key.is_not(None)))).all() if key is not None}


async def running_for(session: StoreSession, project_id: str) -> Operation | None:
    return (await session.scalars(select(Operation).where(Operation.running_key == project_id))).first()
