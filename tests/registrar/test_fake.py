"""The fake registrar itself and its client, beyond the port's contract: the wire (status codes, the
error body, the key), the contact kept with the registration, its test endpoints and Python helpers,
and the client's words when the registrar is wrong, gone, or not a registrar at all."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from svc.adapters.registrar.client import RegistrarClient
from svc.adapters.registrar.fake import FakeRegistrar
from svc.adapters.registrar.port import Contact, NameUnavailable, RegistrarError, RegistrarRejected
from tests.support.wait import WAIT_SECONDS, until

CONTACT = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44.2079460000",
           "street": "12 Analytical Row", "city": "London", "postalCode": "W1 1AA", "country": "GB"}


@pytest.fixture
async def http(fake: FakeRegistrar) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fake.url, trust_env=False, timeout=WAIT_SECONDS,
                                 headers={"authorization": f"Bearer {fake.api_key}"}) as client:
        yield client


def _error(answer: httpx.Response) -> dict[str, Any]:
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "field"}, body
    error: dict[str, Any] = body["error"]
    return error


async def test_every_call_needs_the_key(fake: FakeRegistrar, http: httpx.AsyncClient) -> None:
    async with httpx.AsyncClient(base_url=fake.url, trust_env=False) as anon:
        for method, path in [("POST", "/v1/check"), ("POST", "/v1/charges"), ("GET", "/v1/domains/a.com"),
                             ("POST", "/v1/domains/a.com/auth-code")]:
            answer = await anon.request(method, path, json={})
            assert answer.status_code == 401
            assert _error(answer)["code"] == "unauthorized"
            answer = await anon.request(method, path, json={}, headers={"authorization": "Bearer wrong"})
            assert answer.status_code == 401
    assert fake.ledger() == []


async def test_a_wrong_key_is_a_registrar_error_without_the_key(fake: FakeRegistrar) -> None:
    client = RegistrarClient(fake.url, "sk-the-wrong-secret")
    try:
        with pytest.raises(RegistrarError, match="refused svc's API key") as failed:
            await client.check(["a.com"])
        assert "sk-the-wrong-secret" not in str(failed.value)
    finally:
        await client.aclose()


async def test_a_registrar_that_is_gone_or_not_a_registrar(fake: FakeRegistrar) -> None:
    gone = FakeRegistrar()
    url = await gone.start()
    await gone.stop()
    client = RegistrarClient(url, fake.api_key)
    with pytest.raises(RegistrarError, match=f"the fake registrar at {url} could not be reached"):
        await client.check(["a.com"])
    await client.aclose()
    # Pointed at the wrong path: Starlette's plain 404, not the registrar's answer.
    client = RegistrarClient(f"{fake.url}/elsewhere", fake.api_key)
    assert client.description == f"the fake registrar at {fake.url}/elsewhere"
    for call in (client.check(["a.com"]), client.domain("a.com")):
        with pytest.raises(RegistrarError, match="something that is not its API"):
            await call
    await client.aclose()


async def test_charges_answer_201_then_200_for_the_same_key(fake: FakeRegistrar, http: httpx.AsyncClient) -> None:
    body = {"name": "Example.COM.", "years": 2, "amountCents": 2400, "idempotencyKey": "k1"}
    first = await http.post("/v1/charges", json=body)
    assert first.status_code == 201
    charge = first.json()
    assert charge == {"id": charge["id"], "name": "example.com", "years": 2, "amountCents": 2400,
                      "status": "charged"}
    again = await http.post("/v1/charges", json=body)
    assert again.status_code == 200 and again.json() == charge
    other = await http.post("/v1/charges", json={**body, "years": 1, "amountCents": 1200})
    assert other.status_code == 422 and _error(other)["field"] == "idempotencyKey"
    for bad, field in [({"years": 0}, "years"), ({"years": 11}, "years"), ({"amountCents": "12"}, "amountCents"),
                       ({"name": "example.zz", "idempotencyKey": "k2"}, "name")]:
        answer = await http.post("/v1/charges", json={**body, "idempotencyKey": "k3", **bad})
        assert answer.status_code == 422 and _error(answer)["field"] == field, bad
    refunded = await http.post(f"/v1/charges/{charge['id']}/refund")
    assert refunded.json() == {**charge, "status": "refunded"}
    missing = await http.post("/v1/charges/ch_nope/refund")
    assert missing.status_code == 404 and _error(missing)["code"] == "not_found"
    assert [(e["kind"], e["amountCents"]) for e in fake.ledger()] == [("charge", 2400), ("refund", 2400)]
    assert all(e["at"].endswith("Z") and e["id"] for e in fake.ledger())


async def test_the_registration_keeps_its_contact(fake: FakeRegistrar, http: httpx.AsyncClient) -> None:
    charge = (await http.post("/v1/charges", json={"name": "kept.org", "years": 1, "amountCents": 1000,
                                                     "idempotencyKey": "k"})).json()
    body = {"name": "kept.org", "years": 1, "contact": CONTACT, "chargeId": charge["id"]}
    made = await http.post("/v1/domains", json=body)
    assert made.status_code == 201
    domain = made.json()
    assert domain["nameservers"] == ["ns1.fake-registrar.test", "ns2.fake-registrar.test"]
    assert domain["expiresAt"].endswith("Z") and domain["locked"] is True and domain["autoRenew"] is True
    again = await http.post("/v1/domains", json=body)
    assert again.status_code == 200 and again.json() == domain
    listed = (await http.get("/_fake/domains")).json()["domains"]
    assert listed == [{**domain, "contact": CONTACT, "chargeId": charge["id"], "inAccount": True, "ds": []}]
    assert fake.domains() == listed
    await http.post("/_fake/transferred-away", json={"name": "kept.org"})
    assert (await http.get("/v1/domains/kept.org")).status_code == 404
    assert fake.domains()[0]["inAccount"] is False
    taken = await http.post("/v1/domains", json=body)
    assert taken.status_code == 409 and _error(taken)["code"] == "unavailable"


async def test_renewal_stops_ten_years_ahead(fake: FakeRegistrar, contact: Contact) -> None:
    client = RegistrarClient(fake.url, fake.api_key)
    try:
        [quote] = await client.check(["long.net"])
        assert quote.price_cents is not None
        charge_id = await client.charge(name="long.net", years=9, amount_cents=quote.price_cents * 9, key="k")
        await client.register(name="long.net", years=9, contact=contact, charge_id=charge_id)
        with pytest.raises(RegistrarRejected) as refused:
            await client.renew("long.net", years=2, key="r1")
        assert refused.value.field == "years"
        renewed = await client.renew("long.net", years=1, key="r2")
        assert renewed.expires_at - datetime.now(UTC) < timedelta(days=3650, minutes=1)
        assert [(e["kind"], e["amountCents"]) for e in fake.ledger()] == [("charge", 9 * 1300), ("renewal", 1500)]
    finally:
        await client.aclose()


async def test_python_helpers(fake: FakeRegistrar, contact: Contact) -> None:
    client = RegistrarClient(fake.url, fake.api_key)
    try:
        fake.set_price("gold.com", price_cents=99_00, available=True)
        fake.set_price("blocked.com", available=False)
        fake.taken("gone.com")
        quotes = await client.check(["gold.com", "blocked.com", "gone.com"])
        assert [(q.available, q.price_cents, q.renewal_cents) for q in quotes] == [
            (True, 9900, 1400), (False, 1200, 1400), (False, 1200, 1400)]
        charge_id = await client.charge(name="gold.com", years=1, amount_cents=9900, key="k")
        fake.fail("register", "taken")
        with pytest.raises(NameUnavailable):
            await client.register(name="gold.com", years=1, contact=contact, charge_id=charge_id)
        charge_id = await client.charge(name="mine.com", years=1, amount_cents=1200, key="k2")
        await client.register(name="mine.com", years=1, contact=contact, charge_id=charge_id)
        when = datetime(2029, 5, 6, 7, 8, 9, tzinfo=UTC)
        fake.expire("mine.com", when)
        assert (await client.domain("mine.com")).expires_at == when
        assert [c["step"] for c in fake.calls()] == ["check", "charge", "register", "charge", "register", "domain"]
        assert [c["status"] for c in fake.calls("register")] == [409, 201]
        fake.reset()
        assert fake.ledger() == [] and fake.domains() == [] and fake.calls() == []
        assert (await client.check(["gone.com"]))[0].available
    finally:
        await client.aclose()


async def test_a_held_call_is_let_go(fake: FakeRegistrar, http: httpx.AsyncClient) -> None:
    assert (await http.post("/_fake/fail", json={"step": "check", "mode": "timeout"})).status_code == 200
    held = asyncio.create_task(http.post("/v1/check", json={"names": ["a.com"]}))
    await until(lambda: not fake.state.failures["check"], what="the fake holding the call")
    assert not held.done()
    assert (await http.post("/_fake/release")).status_code == 200
    answer = await held
    assert answer.status_code == 503 and _error(answer)["code"] == "unavailable_now"
    assert (await http.post("/v1/check", json={"names": ["a.com"]})).status_code == 200


async def test_the_test_endpoints_refuse_what_they_do_not_know(http: httpx.AsyncClient) -> None:
    for body, field in [({"step": "nope", "mode": "error"}, "step"), ({"step": "check", "mode": "nope"}, "mode"),
                        ({"step": "check", "mode": "error", "times": "2"}, "times")]:
        answer = await http.post("/_fake/fail", json=body)
        assert answer.status_code == 400 and _error(answer)["field"] == field
    assert (await http.post("/_fake/nothing", json={})).status_code == 404
    assert (await http.post("/_fake/expire", json={"name": "x.com", "expiresAt": "2030-01-01"})).status_code == 404
    assert (await http.post("/_fake/expire", json={"name": "x.com", "expiresAt": "soon"})).status_code == 400
    answer = await http.post("/v1/check", content=b"{not json")
    assert answer.status_code == 400 and _error(answer)["code"] == "bad_request"


async def test_a_500_is_said_in_the_registrar_s_words(fake: FakeRegistrar, http: httpx.AsyncClient) -> None:
    await http.post("/_fake/fail", json={"step": "domain", "mode": "error", "message": "database on fire"})
    client = RegistrarClient(fake.url, fake.api_key)
    try:
        with pytest.raises(RegistrarError, match=r"answered 500: database on fire"):
            await client.domain("a.com")
    finally:
        await client.aclose()
