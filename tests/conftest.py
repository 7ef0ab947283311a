"""Fixtures: every API test runs on both state stores (SQLite file, PostgreSQL database)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from svc.app import default_adapters
from svc.settings import Settings
from tests.support import stores
from tests.support.api import Svc, running_svc
from tests.support.pdns import Pdns, clear_zones, running_pdns
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


@pytest.fixture(scope="session")
async def pdns(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pdns]:
    """One real PowerDNS per test process (svc's managed pdns_server on free ports). Tests that
    use it through `dns_svc` start with no zones at it."""
    async with running_pdns(tmp_path_factory.mktemp("pdns")) as running:
        yield running


@pytest.fixture
def dns_settings(settings: Settings, pdns: Pdns) -> Settings:
    """`settings` naming the shared PowerDNS's nameservers and answering on its DNS address, its
    zones trusted as a local run trusts them (SVC_TRUST_OWN_ZONES: every zone counts as delegated,
    and ownership lookups ask that PowerDNS). What holds without that trust is tested with a second
    PowerDNS standing for the public DNS (tests/support/public_dns.py)."""
    return settings.model_copy(update={"nameservers": pdns.settings.nameservers,
                                       "hostmaster": pdns.settings.hostmaster,
                                       "dns_host": pdns.host, "dns_port": pdns.port, "trust_own_zones": True})


@pytest.fixture
async def dns_svc(dns_settings: Settings, pdns: Pdns) -> AsyncIterator[Svc]:
    """svc (both stores) with its worker, driving the shared real PowerDNS; zones left at the
    nameserver by an earlier test are removed first."""
    await clear_zones(pdns)
    adapters = default_adapters(dns_settings)
    adapters.nameserver = pdns.nameserver
    async with running_svc(dns_settings, adapters) as running:
        yield running
