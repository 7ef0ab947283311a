"""Fixtures for the registrar's contract: `registrar` (the port, over HTTP), `impatient_registrar`
(the same with a half-second timeout), `control` (what a test makes the registrar do, through its
own test endpoints), and a valid `contact`. Each test starts from an empty fake registrar.

The contract tests (test_contract.py) use these fixtures only, so another adapter runs them by
providing the same fixtures for itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from svc.adapters.registrar.client import RegistrarClient
from svc.adapters.registrar.fake import FakeRegistrar
from svc.adapters.registrar.port import Contact, Registrar


class FakeControl:
    """The test actions on the fake registrar, over its /_fake endpoints."""

    def __init__(self, url: str) -> None:
        self._http = httpx.AsyncClient(base_url=f"{url}/_fake", timeout=5, trust_env=False)

    async def _post(self, action: str, body: dict[str, Any] | None = None) -> None:
        answer = await self._http.post(f"/{action}", json=body or {})
        assert answer.status_code == 200, answer.text

    async def fail(self, step: str, mode: str, **kw: Any) -> None:
        """The next call(s) of `step` fail so (kw: times, field, message)."""
        await self._post("fail", {"step": step, "mode": mode, **kw})

    async def release(self) -> None:
        """Let go of the calls held (modes timeout and lost)."""
        await self._post("release")

    async def taken(self, name: str) -> None:
        await self._post("taken", {"name": name})

    async def reserved(self, name: str) -> None:
        await self._post("prices", {"name": name, "available": False})

    async def set_price(self, name: str, price_cents: int, renewal_cents: int | None = None) -> None:
        await self._post("prices", {"name": name, "priceCents": price_cents, "renewalCents": renewal_cents})

    async def transferred_away(self, name: str) -> None:
        await self._post("transferred-away", {"name": name})

    async def expire(self, name: str, expires_at: datetime) -> None:
        await self._post("expire", {"name": name, "expiresAt": expires_at.isoformat()})

    async def ledger(self) -> list[dict[str, Any]]:
        answer = await self._http.get("/ledger")
        assert answer.status_code == 200, answer.text
        entries: list[dict[str, Any]] = answer.json()["entries"]
        return entries

    async def aclose(self) -> None:
        await self._http.aclose()


@pytest.fixture(scope="module")
async def fake_server() -> AsyncIterator[FakeRegistrar]:
    server = FakeRegistrar()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def fake(fake_server: FakeRegistrar) -> FakeRegistrar:
    """A fake registrar as new: one server a module, its state cleared for each test (starting and
    stopping uvicorn costs about a quarter of a second, more than most of these tests)."""
    fake_server.reset()
    return fake_server


@pytest.fixture
async def registrar(fake: FakeRegistrar) -> AsyncIterator[Registrar]:
    client = RegistrarClient(fake.url, fake.api_key)
    yield client
    await client.aclose()


@pytest.fixture
async def impatient_registrar(fake: FakeRegistrar) -> AsyncIterator[Registrar]:
    client = RegistrarClient(fake.url, fake.api_key, timeout_seconds=0.5)
    yield client
    await client.aclose()


@pytest.fixture(scope="module")
async def _fake_control(fake_server: FakeRegistrar) -> AsyncIterator[FakeControl]:
    made = FakeControl(fake_server.url)
    yield made
    await made.aclose()


@pytest.fixture
def control(fake: FakeRegistrar, _fake_control: FakeControl) -> FakeControl:
    return _fake_control


@pytest.fixture
def api_key(fake: FakeRegistrar) -> str:
    """The secret that no message may show."""
    return fake.api_key


@pytest.fixture
def contact() -> Contact:
    return Contact(name="Ada Lovelace", email="ada@example.com", phone="+44.2079460000", street="12 Analytical Row",
                   city="London", postal_code="W1 1AA", country="GB")
