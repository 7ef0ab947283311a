"""Real state stores for tests: a fresh SQLite file, or a fresh PostgreSQL database cloned from a
migrated template on the machine's server (SVC_TEST_PG, default postgresql://postgres@127.0.0.1:5432)."""

from __future__ import annotations

import asyncio
import os
import uuid

import asyncpg

from svc.db import migrate, open_database
from svc.settings import Settings

PG_BASE = os.environ.get("SVC_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
_TEMPLATE = f"svc_tpl_{uuid.uuid4().hex[:8]}"
_template_ready = False
_lock = asyncio.Lock()


async def _admin() -> asyncpg.Connection:
    return await asyncpg.connect(f"{PG_BASE}/postgres")


async def _ensure_template() -> None:
    global _template_ready
    async with _lock:
        if _template_ready:
            return
        conn = await _admin()
        try:
            await conn.execute(f'CREATE DATABASE "{_TEMPLATE}"')
        finally:
            await conn.close()
        db = open_database(Settings(database_url=f"{PG_BASE}/{_TEMPLATE}"))
        try:
            await migrate(db)
        finally:
            await db.dispose()
        _template_ready = True


async def new_pg_database() -> str:
    """A migrated, empty database of its own; returns its postgresql:// URL."""
    await _ensure_template()
    name = f"svc_t_{uuid.uuid4().hex[:12]}"
    conn = await _admin()
    try:
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{_TEMPLATE}"')
    finally:
        await conn.close()
    return f"{PG_BASE}/{name}"


async def drop_pg_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    conn = await _admin()
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def drop_template() -> None:
    if not _template_ready:
        return
    conn = await _admin()
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{_TEMPLATE}" WITH (FORCE)')
    finally:
        await conn.close()
