"""Fixtures: every API test runs on both state stores (SQLite file, PostgreSQL database)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from svc.adapters.nameserver.settings import NameserverSettings
from svc.app import default_adapters
from svc.settings import Config, Settings
from tests.support import components, stores
from tests.support.api import Svc, running_svc
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS

# Whether a test's component is missing is decided there (a skip, or in CI a failure): its hooks, as
# this conftest's own (pytest_plugins would import the module again, for assertion rewriting).
from tests.support.components import pytest_configure, pytest_runtest_setup  # noqa: F401
from tests.support.config import configured
from tests.support.pdns import Pdns, clear_zones, running_pdns
from tests.support.projectdb import running_cluster
from tests.support.smtp import SmtpSink, running_smtp_svc

if TYPE_CHECKING:
    from playwright.async_api import Browser

    from svc.adapters.database.process import PrivateCluster

# The browser tests, with the rest of their modules (which share those modules' servers), run on one
# xdist worker (`make unit`: --dist loadgroup): one Chromium and one of each server, not one per worker.
BROWSER_TESTS = ("tests/web/", "tests/access/test_browser.py", "tests/app_auth/test_signin.py")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """loadgroup, with the group decided here from the test's path: xdist 3.8 marks a test's group
    by rewriting its node id, which pytest 9.2's node ids no longer take (pytest-xdist issue 1386),
    so `xdist_group` marks are lost. Every other test is a unit of its own, as with --dist load."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BrowserGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "browser" if nodeid.startswith(BROWSER_TESTS) else nodeid

    return BrowserGroup(config, log)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def database_url(store: str, tmp_path: Path) -> AsyncIterator[str | None]:
    """None for SQLite, whose migrated store is then waiting in the test's data dir (tmp_path/data,
    where `settings` and the areas' own settings fixtures put it)."""
    if store == "sqlite":
        await stores.new_sqlite_store(tmp_path / "data")
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
async def _drop_templates() -> AsyncIterator[None]:
    yield
    await stores.drop_template()
    stores.drop_sqlite_template()


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium (Debian's), one per test process; each test opens contexts of its own."""
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT_MS)
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


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
async def project_cluster() -> AsyncIterator[PrivateCluster]:
    """One private PostgreSQL cluster for the projects' databases per test process."""
    from svc.adapters.database.process import find_postgres

    if find_postgres() is None:
        components.absent("PostgreSQL's server")
    async with running_cluster() as cluster:
        yield cluster


@pytest.fixture
async def db_svc(settings: Settings, project_cluster: PrivateCluster) -> AsyncIterator[Svc]:
    """svc whose projects' databases live on `project_cluster` (its worker running)."""
    from svc.adapters.database.postgres import PostgresNode

    # Its watchdog runs at start and then hourly: the tests with a database check backups and
    # grants, and the watchdog's cancels are test_watchdog.py's (every second there). Twice in
    # full runs a first statement after provisioning was cancelled here (cause not found yet:
    # see the stop's note); the watchdog is the only thing in svc that cancels a statement.
    config = configured(settings, database_watchdog_seconds=60)
    adapters = default_adapters(config)
    node = PostgresNode(project_cluster.admin_url)
    adapters.database = node
    try:
        async with running_svc(config, adapters) as running:
            yield running
    finally:
        await node.close()


@pytest.fixture(scope="session")
async def pdns(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pdns]:
    """One real PowerDNS per test process (svc's managed pdns_server on free ports). Tests that
    use it through `dns_svc` start with no zones at it."""
    async with running_pdns(tmp_path_factory.mktemp("pdns")) as running:
        yield running


@pytest.fixture
def dns_settings(settings: Settings, pdns: Pdns) -> Config:
    """`settings` naming the shared PowerDNS's nameservers and answering on its DNS address, its
    zones trusted as a local run trusts them (SVC_TRUST_OWN_ZONES: every zone counts as delegated,
    and ownership lookups ask that PowerDNS). What holds without that trust is tested with a second
    PowerDNS standing for the public DNS (tests/support/public_dns.py)."""
    ns = pdns.settings.settings_of(NameserverSettings)
    return configured(settings, nameservers=ns.nameservers, hostmaster=ns.hostmaster, dns_host=pdns.host,
                      dns_port=pdns.port, trust_own_zones=True)


@pytest.fixture
async def dns_svc(dns_settings: Config, pdns: Pdns) -> AsyncIterator[Svc]:
    """svc (both stores) with its worker, driving the shared real PowerDNS; zones left at the
    nameserver by an earlier test are removed first."""
    await clear_zones(pdns)
    adapters = default_adapters(dns_settings)
    adapters.nameserver = pdns.nameserver
    async with running_svc(dns_settings, adapters) as running:
        yield running

