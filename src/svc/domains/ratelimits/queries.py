"""SQL of the rate counters: one atomic increment per (key, window), and the previous window's count."""

from __future__ import annotations

from sqlalchemy import delete, select

from svc.db import dialect_insert
from svc.kit.store_session import StoreSession
from svc.models import RateCounter


async def increment(session: StoreSession, key: str, window_start: int) -> int:
    """Count one try in the window; the window's count after it. One statement (an upsert), so
    concurrent tries from several processes are all counted."""
    insert = dialect_insert(session, RateCounter).values(key=key, window_start=window_start, count=1)
    stmt = insert.on_conflict_do_update(index_elements=[RateCounter.key, RateCounter.window_start],
                                        set_={"count": RateCounter.count + 1}).returning(RateCounter.count)
    return int((await session.execute(stmt)).scalar_one())


async def count(session: StoreSession, key: str, window_start: int) -> int:
    return int(await session.scalar(
        select(RateCounter.count).where(RateCounter.key == key, RateCounter.window_start == window_start)) or 0)


async def forget_before(session: StoreSession, window_start: int) -> None:
    """Counters of windows that no longer matter, of every key (housekeeping, indexed)."""
    await session.execute(delete(RateCounter).where(RateCounter.window_start < window_start)
                          .execution_options(synchronize_session=False))
