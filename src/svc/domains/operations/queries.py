"""SQL for operations."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from svc.db import is_postgres
from svc.models import Operation


async def by_id(session: AsyncSession, op_id: str, *, lock: bool = False) -> Operation | None:
    return await session.get(Operation, op_id, with_for_update=lock and is_postgres(session))


async def running_for(session: AsyncSession, project_id: str) -> Operation | None:
    return (await session.scalars(select(Operation).where(Operation.running_key == project_id))).first()
