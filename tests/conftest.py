"""Fixtures: every API test runs on both state stores (SQLite file, PostgreSQL database)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from svc.settings import Settings
from tests.support import stores
from tests.support.api import Svc, running_svc
from tests.support.smtp import SmtpSink, running_smtp_svc


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def database_url(store: str) -> AsyncIterator[str | None]:
    if store == "sqlite":
        yield None
        return
    url = await stores.new_pg_database()
    try:
        yield url
    finally:
        await stores.drop_pg_database(url)


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, enable_dev_auth=True,
                    public_url="http://svc.test", job_poll_seconds=0.05)


@pytest.fixture
async def svc(settings: Settings) -> AsyncIterator[Svc]:
    async with running_svc(settings) as running:
        yield running


@pytest.fixture(scope="session", autouse=True)
async def _drop_pg_template() -> AsyncIterator[None]:
    yield
    await stores.drop_template()


@pytest.fixture
def sink() -> Iterator[SmtpSink]:
    """A real SMTP server (aiosmtpd) on a free port that records what it accepts."""
    with SmtpSink() as running:
        yield running


@pytest.fixture
async def mail_svc(settings: Settings, sink: SmtpSink) -> AsyncIterator[Svc]:
    """svc sending its mail over SMTP to `sink`, with its worker running."""
    async with running_smtp_svc(settings, sink) as svc:
        yield svc


@pytest.fixture
async def held_svc(settings: Settings, sink: SmtpSink) -> AsyncIterator[Svc]:
    """svc sending to `sink` whose worker does not run: a test delivers with tests.support.smtp.deliver_due()."""
    async with running_smtp_svc(settings, sink, run_workers=False) as svc:
        yield svc
