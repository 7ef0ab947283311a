"""Buying a domain: the saga against the fake registrar (its ledger is the proof of what was
charged), every error of the spec, refunds, and resuming."""

from __future__ import annotations

from sqlalchemy import select

from svc.adapters.registrar import FakeRegistrar
from svc.domains.dns import service as dns
from svc.models import AuditEvent, Domain
from tests.domains.conftest import CONTACT
from tests.support.api import Svc, assert_error
from tests.support.team import make_team

D = "/v1/orgs/acme/domains"


def charges(fake: FakeRegistrar, name: str) -> tuple[int, int]:
    """(cents charged, cents refunded) for `name` in the registrar's ledger."""
    lines = [e for e in fake.ledger() if e["name"] == name]
    return (sum(e["amountCents"] for e in lines if e["kind"] == "charge"),
            sum(e["amountCents"] for e in lines if e["kind"] == "refund"))


async def test_buy_end_to_end(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc, other_org=True)
    got = await t.bob.client.post(f"{D}/check", json={"names": ["Shop-Example.COM", "shop.pineapple"]})
    assert got.status_code == 200, got.text
    assert got.json()["results"] == [
        {"name": "shop-example.com", "available": True, "priceCents": 1200, "renewalCents": 1400},
        {"name": "shop.pineapple", "available": False, "priceCents": None, "renewalCents": None}]
    assert_error(await t.vic.client.post(f"{D}/check", json={"names": ["a.com"]}), 403, "forbidden")
    assert_error(await t.bob.client.post(D, json={"name": "shop-example.com", "contact": CONTACT}), 403, "forbidden")

    r = await t.alice.client.post(D, json={"name": "shop-example.com", "years": 2, "contact": CONTACT})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["status"] == "active" and body["source"] == "purchase" and body["locked"] is True
    assert "alice@example.net" in body["notice"]
    assert body["nameservers"] == [n.rstrip(".") for n in dns.nameservers(dsvc.ctx.config)]
    assert charges(registrar, "shop-example.com") == (2400, 0)
    held = next(d for d in registrar.domains() if d["name"] == "shop-example.com")
    assert held["contact"]["email"] == "alice@example.net"
    assert held["nameservers"] == body["nameservers"]
    # The zone is on svc's nameservers, delegated by construction.
    zone = (await t.vic.client.get("/v1/orgs/acme/dns/zones/shop-example.com")).json()
    assert zone["delegated"] is True
    # A repeat: 200, nothing charged again.
    again = await t.alice.client.post(D, json={"name": "shop-example.com", "years": 2, "contact": CONTACT})
    assert again.status_code == 200 and again.json()["status"] == "active"
    assert charges(registrar, "shop-example.com") == (2400, 0)
    # Another org cannot buy or import it.
    assert_error(await t.eve.client.post("/v1/orgs/other/domains", json={"name": "shop-example.com",
                                                                         "contact": CONTACT}), 409, "domain_taken")
    assert_error(await t.eve.client.post("/v1/orgs/other/domains/import", json={"name": "shop-example.com"}), 409,
                 "domain_taken")
    assert_error(await t.eve.client.get("/v1/orgs/other/domains/shop-example.com"), 404, "not_found")
    # The history tells the steps; the contact is nowhere in svc's store.
    detail = (await t.vic.client.get(f"{D}/shop-example.com")).json()
    assert [h["action"] for h in reversed(detail["history"])] == ["quote", "payment", "registered", "nameservers"]
    async with dsvc.ctx.db.transaction(write=False) as s:
        stored = str([(a.action, a.data) for a in (await s.scalars(select(AuditEvent))).all()])
        stored += str([d.__dict__ for d in (await s.scalars(select(Domain))).all()])
    assert "domain.purchase" in stored
    for part in ("alice@example.net", "+1.5555551234", "1 Main St", "Alice Example"):
        assert part not in stored
    listed = (await t.vic.client.get(D)).json()["domains"]
    assert [d["name"] for d in listed] == ["shop-example.com"]


async def test_declined_then_resumed(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.fail("charge", "decline")
    assert_error(await t.alice.client.post(D, json={"name": "pay.com", "contact": CONTACT}), 402, "payment_failed")
    shown = (await t.vic.client.get(f"{D}/pay.com")).json()
    assert shown["status"] == "pending_payment" and "declined" in shown["lastError"]
    assert charges(registrar, "pay.com") == (0, 0)
    r = await t.alice.client.post(D, json={"name": "pay.com", "contact": CONTACT})
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    assert charges(registrar, "pay.com") == (1200, 0)


async def test_rejected_contact_is_refunded(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.fail("register", "reject", field="contact.street", message="street not deliverable")
    r = await t.alice.client.post(D, json={"name": "refund.com", "contact": CONTACT})
    assert_error(r, 422, "registrar_rejected")
    assert "refunded" in r.json()["message"]
    assert charges(registrar, "refund.com") == (1200, 1200)
    detail = (await t.vic.client.get(f"{D}/refund.com")).json()
    assert detail["status"] == "pending_payment"
    assert "refund" in [h["action"] for h in detail["history"]]
    # The corrected request is a new attempt: charged once more, registered.
    r = await t.alice.client.post(D, json={"name": "refund.com", "contact": {**CONTACT, "street": "2 Main St"}})
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    assert charges(registrar, "refund.com") == (2400, 1200)


async def test_taken_meanwhile_is_refunded(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.fail("register", "taken")
    assert_error(await t.alice.client.post(D, json={"name": "race.com", "contact": CONTACT}), 409,
                 "domain_unavailable")
    assert charges(registrar, "race.com") == (1200, 1200)
    # Asked again, the name is gone: nothing is charged, nothing is left pending.
    assert_error(await t.alice.client.post(D, json={"name": "race.com", "contact": CONTACT}), 409,
                 "domain_unavailable")
    assert charges(registrar, "race.com") == (1200, 1200)
    assert_error(await t.vic.client.get(f"{D}/race.com"), 404, "not_found")


async def test_registrar_failures_resume(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.fail("check", "error")
    assert_error(await t.alice.client.post(D, json={"name": "flaky.com", "contact": CONTACT}), 502, "registrar_error")
    registrar.fail("register", "timeout")
    assert_error(await t.alice.client.post(D, json={"name": "flaky.com", "contact": CONTACT}), 502,
                 "saga_incomplete")
    assert (await t.vic.client.get(f"{D}/flaky.com")).json()["status"] == "registering"
    registrar.release()
    registrar.fail("nameservers", "garbage")
    assert_error(await t.alice.client.post(D, json={"name": "flaky.com", "contact": CONTACT}), 502,
                 "saga_incomplete")
    assert (await t.vic.client.get(f"{D}/flaky.com")).json()["status"] == "setting_ns"
    r = await t.alice.client.post(D, json={"name": "flaky.com", "contact": CONTACT})
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    assert charges(registrar, "flaky.com") == (1200, 0)
    assert registrar.calls("register") and len([d for d in registrar.domains() if d["name"] == "flaky.com"]) == 1


async def test_unavailable_and_bad_input(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.taken("held.com")
    assert_error(await t.alice.client.post(D, json={"name": "held.com", "contact": CONTACT}), 409,
                 "domain_unavailable")
    for name, field in (("a" * 64 + ".com", "name"), ("www.example.com", "name"), ("example.123", "name"),
                        ("bad name.com", "name"), ("", "name")):
        r = await t.alice.client.post(D, json={"name": name, "contact": CONTACT})
        assert_error(r, 400, None)
        assert field in r.text
    for key, value in (("email", "nobody"), ("phone", "555-1234"), ("country", "USA"), ("city", "")):
        r = await t.alice.client.post(D, json={"name": "fine.com", "contact": {**CONTACT, key: value}})
        assert_error(r, 400, None)
        assert key in r.text
    r = await t.alice.client.post(D, json={"name": "fine.com", "contact": {k: v for k, v in CONTACT.items()
                                                                         if k != "phone"}})
    assert_error(r, 400, None)
    assert charges(registrar, "fine.com") == (0, 0)
    assert (await t.vic.client.get(D)).json()["domains"] == []
    # Unicode names are bought as IDNA.
    got = (await t.bob.client.post(f"{D}/check", json={"names": ["bücher.com"]})).json()
    assert got["results"][0]["name"] == "xn--bcher-kva.com"
