"""Fixtures for the registrar's contract, each test run once per adapter (ids `fake`, `dnsimple`):
`registrar` (the port), `impatient_registrar` (the same with a half-second timeout), `control`
(what a test makes the registrar do), `api_key` (the secret no message may show) and a valid
`contact`. Each test starts from an empty registrar.

- fake: RegistrarClient over HTTP to the fake registrar (one server a module, its state cleared for
  each test); `control` is FakeControl, over the fake's /_fake endpoints.
- dnsimple: DnsimpleRegistrar on the stateful DNSimple double (tests/support/dnsimple_double.py, as
  an httpx transport; a new double for each test, with the fake's price list so that both quote
  alike); `control` is DnsimpleControl, the same actions on the double's controls.

The contract tests (test_contract.py) use these fixtures only. A test whose promise DNSimple by
design does not make is marked `@pytest.mark.fake_only("why")` (also on a `pytest.param`): it is
skipped for dnsimple, with the reason."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from svc.adapters.registrar.client import RegistrarClient
from svc.adapters.registrar.dnsimple import DnsimpleRegistrar
from svc.adapters.registrar.fake import GARBAGE, FakeRegistrar
from svc.adapters.registrar.fake_state import PRICES
from svc.adapters.registrar.port import Contact, Registrar
from tests.support.dnsimple_double import DnsimpleDouble
from tests.support.wait import WAIT_SECONDS

ADAPTERS = ["fake", "dnsimple"]
DNSIMPLE_TOKEN = "dnsimple-contract-secret-token-5150"

# The requests of each step of the port on DNSimple ("METHOD path" after /v2/{account}/): the one a
# control's failure of that step meets. refund sends none (nothing was taken to give back).
DNSIMPLE_STEPS = {
    "check": r"GET registrar/domains/[^/]+/check",
    "charge": r"GET registrar/domains/[^/]+/prices",  # charge re-reads the price, and that is all it sends
    "register": r"POST registrar/domains/[^/]+/registrations",
    "nameservers": r"PUT registrar/domains/[^/]+/delegation",
    "domain": r"GET domains/[^/]+",
    "renew": r"POST registrar/domains/[^/]+/renewals",
    "lock": r"(POST|DELETE) registrar/domains/[^/]+/transfer_lock",
    "auto-renew": r"(PUT|DELETE) registrar/domains/[^/]+/auto_renewal",
    "auth-code": r"POST registrar/domains/[^/]+/authorize_transfer_out",
}
# The port's field names in DNSimple's (for a refusal that names one).
DNSIMPLE_FIELDS = {
    "years": "period", "contact.name": "last_name", "contact.street": "address1", "contact.city": "city",
    "contact.postalCode": "postal_code", "contact.country": "country", "contact.email": "email",
    "contact.phone": "phone", "amountCents": "premium_price",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fake_only(reason): a registrar contract test DNSimple by design does not pass (skipped there)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("fake_only")
        callspec = getattr(item, "callspec", None)
        if marker is not None and callspec is not None and callspec.params.get("adapter") == "dnsimple":
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"not DNSimple's promise: {reason}"))


class FakeControl:
    """The test actions on the fake registrar, over its /_fake endpoints."""

    def __init__(self, url: str) -> None:
        self._http = httpx.AsyncClient(base_url=f"{url}/_fake", timeout=WAIT_SECONDS, trust_env=False)

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


class DnsimpleControl:
    """FakeControl's actions on the DNSimple double. A failure of a step meets the request that step
    sends (DNSIMPLE_STEPS); a declined payment meets the next registration or renewal, where
    DNSimple takes the money (its `charge` takes none)."""

    def __init__(self, double: DnsimpleDouble) -> None:
        self.double = double

    async def fail(self, step: str, mode: str, *, times: int = 1, field: str | None = None,
                   message: str | None = None) -> None:
        """The next `times` calls of `step` fail so (modes as the fake's: decline, reject, error,
        timeout, lost, garbage, taken)."""
        if step == "refund":
            raise ValueError("DNSimple's refund sends no request: there is nothing to fail")
        request = DNSIMPLE_STEPS[step]
        for _ in range(times):
            if mode == "decline":
                if step not in ("charge", "register", "renew"):
                    raise ValueError(f"DNSimple takes money at registration and renewal only, not at {step}")
                self.double.decline_next(message)
            elif mode == "reject":
                named = DNSIMPLE_FIELDS.get(field or "")
                said = message or "the registrar refused the request"
                body = {"message": said, "errors": {named: [said]} if named else {}}
                self.double.fail_next(400, json.dumps(body), request=request)
            elif mode == "error":
                self.double.fail_next(500, request=request)
            elif mode == "garbage":
                self.double.fail_next(200, GARBAGE, request=request)
            elif mode in ("timeout", "lost"):
                self.double.hold_next(request, done=mode == "lost")
            elif mode == "taken" and step == "register":
                self.double.take_next()
            else:
                raise ValueError(f"no mode {mode!r} for {step} on DNSimple")

    async def release(self) -> None:
        self.double.release()

    async def taken(self, name: str) -> None:
        self.double.take(name)

    async def reserved(self, name: str) -> None:
        # DNSimple's check says of a name the registry reserves what it says of a taken one: not available.
        self.double.take(name)

    async def set_price(self, name: str, price_cents: int, renewal_cents: int | None = None) -> None:
        # A name priced on its own is a premium name at DNSimple (registering it confirms the price).
        current = self.double.price(name)
        renewal = _dollars(renewal_cents) if renewal_cents is not None else str(current[1]) if current else None
        self.double.make_premium(name, _dollars(price_cents), renewal)

    async def transferred_away(self, name: str) -> None:
        self.double.transfer_away(name)

    async def expire(self, name: str, expires_at: datetime) -> None:
        self.double.expire(name, expires_at)

    async def ledger(self) -> list[dict[str, Any]]:
        """What DNSimple charged, in the fake's ledger's shape: a "charge" for each registration (the
        money moves there), a "renewal" for each renewal, never a "refund" (nothing is taken back)."""
        kinds = {"domain-registration": "charge", "domain-renewal": "renewal"}
        return [{"kind": kinds[c["product_type"]], "name": c["domain"], "amountCents": int(c["amount"] * 100)}
                for c in self.double.charges]


def _dollars(cents: int) -> str:
    return str(Decimal(cents) / 100)


class Adapter:
    """One adapter under the contract: how to make its registrar, its control and its secret."""

    def __init__(self, kind: str, *, fake: FakeRegistrar | None = None, control: Any,
                 double: DnsimpleDouble | None = None) -> None:
        self.kind = kind
        self.fake = fake
        self.double = double
        self.control = control

    @property
    def api_key(self) -> str:
        return self.fake.api_key if self.fake is not None else DNSIMPLE_TOKEN

    def registrar(self, timeout_seconds: float = 15.0) -> Registrar:
        if self.fake is not None:
            return RegistrarClient(self.fake.url, self.fake.api_key, timeout_seconds=timeout_seconds)
        assert self.double is not None
        return DnsimpleRegistrar(token=self.double.token, account_id=self.double.account_id,
                                 base_url="https://api.dnsimple.test", transport=self.double.transport(),
                                 timeout_seconds=timeout_seconds, poll_delay_seconds=0)


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


@pytest.fixture(scope="module")
async def _fake_control(fake_server: FakeRegistrar) -> AsyncIterator[FakeControl]:
    made = FakeControl(fake_server.url)
    yield made
    await made.aclose()


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> Iterator[Adapter]:
    """The adapter under test: the fake's server is started only for `fake`, the double only made
    for `dnsimple`."""
    if request.param == "fake":
        fake: FakeRegistrar = request.getfixturevalue("fake")
        yield Adapter("fake", fake=fake, control=request.getfixturevalue("_fake_control"))
        # Every failure a test queued met the call it was meant for.
        assert not any(fake.state.failures.values()), fake.state.failures
        return
    double = DnsimpleDouble(token=DNSIMPLE_TOKEN)
    for tld, (price, renewal) in PRICES.items():  # the fake's price list, so both quote alike
        double.set_price(tld, _dollars(price), _dollars(renewal))
    yield Adapter("dnsimple", double=double, control=DnsimpleControl(double))
    double.release()  # requests still held end now
    assert not double.unspent(), f"queued but never met: {double.unspent()}"


@pytest.fixture
async def registrar(adapter: Adapter) -> AsyncIterator[Registrar]:
    made = adapter.registrar()
    yield made
    await made.aclose()


@pytest.fixture
async def impatient_registrar(adapter: Adapter) -> AsyncIterator[Registrar]:
    made = adapter.registrar(timeout_seconds=0.5)
    yield made
    await made.aclose()


@pytest.fixture
def control(adapter: Adapter) -> Any:
    return adapter.control


@pytest.fixture
def api_key(adapter: Adapter) -> str:
    """The secret that no message may show."""
    return adapter.api_key


@pytest.fixture
def contact() -> Contact:
    return Contact(name="Ada Lovelace", email="ada@example.com", phone="+44.2079460000", street="12 Analytical Row",
                   city="London", postal_code="W1 1AA", country="GB")
