from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from svc.db import migrate, open_database
from svc.settings import Settings
from tests.jobs.helpers import Store


@pytest.fixture
async def store_db(settings: Settings) -> AsyncIterator[Store]:
    """The test's state store (SQLite file or PostgreSQL database), migrated, without an app around it."""
    db = open_database(settings)
    await migrate(db)
    try:
        yield Store(settings=settings, db=db)
    finally:
        await db.dispose()
