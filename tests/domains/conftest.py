"""svc (both stores) with its worker, the shared real PowerDNS, and a fake registrar of its own
(a real HTTP server) that the tests drive and read (its ledger, its registrations)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from svc.adapters.registrar import FakeRegistrar
from svc.app import default_adapters
from svc.settings import Settings
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.pdns import Pdns, clear_zones

CONTACT = {"name": "Alice Example", "email": "alice@example.net", "phone": "+1.5555551234",
           "street": "1 Main St", "city": "Springfield", "postalCode": "12345", "country": "US"}


@pytest.fixture
async def registrar() -> AsyncIterator[FakeRegistrar]:
    fake = FakeRegistrar()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@contextlib.asynccontextmanager
async def domains_svc(dns_settings: Settings, pdns: Pdns, registrar: FakeRegistrar, *,
                      registrar_timeout: float) -> AsyncIterator[Svc]:
    """svc on the suite's PowerDNS (its zones cleared) and the fake registrar, waiting for the
    registrar `registrar_timeout` seconds at most."""
    await clear_zones(pdns)
    settings = configured(dns_settings, registrar="fake", registrar_url=registrar.url,
                          registrar_timeout_seconds=registrar_timeout)
    adapters = default_adapters(settings)
    adapters.nameserver = pdns.nameserver
    async with running_svc(settings, adapters) as running:
        yield running


@pytest.fixture
async def dsvc(dns_settings: Settings, pdns: Pdns, registrar: FakeRegistrar) -> AsyncIterator[Svc]:
    async with domains_svc(dns_settings, pdns, registrar, registrar_timeout=2.0) as running:
        yield running
