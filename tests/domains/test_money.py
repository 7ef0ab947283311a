"""Every refund happens and every renewal is charged once (issue 43, 9-11), against the fake
registrar's wire protocol and its ledger: a refund that failed is what the resend retries (never a
registration), and the sync cycle retries it when nobody resends; a refund writes its audit event
and tells the org's admins; a renewal is keyed by its request (its Idempotency-Key, or the one in
flight it joins), never by the expiry it reads; one `domain.renew` event per charge, with its price."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from svc.adapters.registrar import FakeRegistrar
from svc.domains.domain_names import jobs
from svc.jobs.registry import JobRun
from svc.models import Notification
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.domains.conftest import CONTACT, domains_svc
from tests.domains.test_purchase import charges
from tests.support.api import Svc, User, assert_error
from tests.support.pdns import Pdns
from tests.support.team import make_team
from tests.support.wait import until

D = "/v1/orgs/acme/domains"


async def _events(admin: User, action: str) -> list[tuple[Any, ...]]:
    r = await admin.client.get("/v1/orgs/acme/audit", params={"action": action, "limit": 200})
    assert r.status_code == 200, r.text
    return [(e["action"], e["target"], e["payload"]) for e in reversed(r.json()["events"])]


async def _notified(svc: Svc, kind: str) -> list[str]:
    async with svc.ctx.db.transaction(write=False) as s:
        return [n.message for n in (await s.scalars(select(Notification).where(Notification.kind == kind))).all()]


def _renewals(fake: FakeRegistrar, name: str) -> list[int]:
    return [e["amountCents"] for e in fake.ledger() if e["name"] == name and e["kind"] == "renewal"]


async def _history(user: User, name: str) -> list[str]:
    return [h["action"] for h in (await user.client.get(f"{D}/{name}")).json()["history"]]


async def test_a_failed_refund_is_what_the_resend_retries(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.fail("register", "reject", field="contact.street", message="street not deliverable")
    registrar.fail("refund", "error")
    r = await t.alice.client.post(D, json={"name": "owed.com", "contact": CONTACT})
    assert "retry the refund" in assert_error(r, 502, "saga_incomplete")["message"]
    assert charges(registrar, "owed.com") == (1200, 0)
    assert (await t.vic.client.get(f"{D}/owed.com")).json()["status"] == "registering"

    # The same request again: the refund, and nothing else (no registration with the refused contact).
    r = await t.alice.client.post(D, json={"name": "owed.com", "contact": CONTACT})
    body = assert_error(r, 422, "registrar_rejected")
    assert "refunded" in body["message"] and body["details"] == {"field": "contact.street"}
    assert charges(registrar, "owed.com") == (1200, 1200)
    assert len(registrar.calls("register")) == 1
    assert not [d for d in registrar.domains() if d["name"] == "owed.com"]
    assert (await t.vic.client.get(f"{D}/owed.com")).json()["status"] == "pending_payment"
    # Sent once more: the charge is not refunded again (the contact is accepted now: a new charge).
    r = await t.alice.client.post(D, json={"name": "owed.com", "contact": CONTACT})
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    assert charges(registrar, "owed.com") == (2400, 1200)


async def test_a_refund_is_audited_and_told_to_the_admins(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.fail("register", "reject", field="contact.street", message="street not deliverable")
    registrar.fail("refund", "error")
    assert_error(await t.alice.client.post(D, json={"name": "told.com", "contact": CONTACT}), 502, "saga_incomplete")
    assert await _events(t.alice, "domain.refund") == [] and await _notified(dsvc, "domain.refund") == []
    assert_error(await t.alice.client.post(D, json={"name": "told.com", "contact": CONTACT}), 422,
                 "registrar_rejected")
    events = await _events(t.alice, "domain.refund")
    assert [(a, target, {k: v for k, v in data.items() if k != "chargeId"}) for a, target, data in events] == [
        ("domain.refund", "told.com", {"name": "told.com", "priceCents": 1200})]
    refunded = [e["chargeId"] for e in registrar.ledger() if e["kind"] == "refund"]
    assert [data["chargeId"] for *_, data in events] == refunded
    told = await _notified(dsvc, "domain.refund")
    assert len(told) == 1 and "told.com" in told[0] and "$12.00" in told[0]
    assert (await _history(t.vic, "told.com")).count("refund") == 1
    # The corrected request is charged anew, and registered; still one refund on record.
    r = await t.alice.client.post(D, json={"name": "told.com", "contact": {**CONTACT, "street": "2 Main St"}})
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    assert charges(registrar, "told.com") == (2400, 1200)
    assert len(await _events(t.alice, "domain.refund")) == 1 and len(await _notified(dsvc, "domain.refund")) == 1


async def test_the_cycle_makes_a_refund_nobody_asked_for_again(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    registrar.fail("register", "taken")
    registrar.fail("refund", "error")
    assert_error(await t.alice.client.post(D, json={"name": "gone.com", "contact": CONTACT}), 502, "saga_incomplete")
    assert charges(registrar, "gone.com") == (1200, 0)
    async with unit_of_work(dsvc.ctx, Tx.READ_THEN_WRITE) as uow:
        await jobs.sync_cycle(JobRun(ctx=dsvc.ctx, job_id="test", kind="domains.sync_cycle", payload={},
                                     attempt=1, max_attempts=1, uow=uow))
    assert charges(registrar, "gone.com") == (1200, 1200)
    assert len(await _events(t.alice, "domain.refund")) == 1
    # The buyer's resend finds the name gone and the charge back: nothing held, nothing charged.
    assert_error(await t.alice.client.post(D, json={"name": "gone.com", "contact": CONTACT}), 409,
                 "domain_unavailable")
    assert charges(registrar, "gone.com") == (1200, 1200)
    assert_error(await t.vic.client.get(f"{D}/gone.com"), 404, "not_found")


async def test_the_dashboards_renew_form_is_keyed_by_its_page(dsvc: Svc, registrar: FakeRegistrar) -> None:
    """The form carries a key made with the page: sent twice (a double click, a resend after a
    dropped answer), it renews and charges once; the page shown again renews anew."""
    t = await make_team(dsvc)
    assert (await t.alice.client.post(D, json={"name": "form.com", "contact": CONTACT})).status_code == 201
    page = dsvc.browser(t.alice.token)

    async def renew_form() -> dict[str, str]:
        html = (await page.get("/orgs/acme/domains/form.com")).text
        form = html[html.index('action="/orgs/acme/domains/form.com/renew"'):]
        form = form[:form.index("</form>")]
        fields = dict(re.findall(r'name="(csrf|request_key)" value="([^"]+)"', form))
        assert set(fields) == {"csrf", "request_key"}, form
        return fields | {"years": "1"}

    sent = await renew_form()
    for _ in range(2):
        r = await page.post("/orgs/acme/domains/form.com/renew", data=sent)
        assert r.status_code == 303, r.text
    assert _renewals(registrar, "form.com") == [1400]
    again = await renew_form()
    assert again["request_key"] != sent["request_key"]
    assert (await page.post("/orgs/acme/domains/form.com/renew", data=again)).status_code == 303
    assert _renewals(registrar, "form.com") == [1400, 1400]


async def test_renew_is_keyed_by_its_request(dsvc: Svc, registrar: FakeRegistrar) -> None:
    """One renew, then five concurrent ones under one Idempotency-Key: two charges, two events."""
    t = await make_team(dsvc)
    assert (await t.alice.client.post(D, json={"name": "keep.com", "contact": CONTACT})).status_code == 201
    assert (await t.alice.client.post(f"{D}/keep.com/renew", json={"years": 1})).status_code == 200
    key = {"Idempotency-Key": "renew-keep-2"}
    got = await asyncio.gather(*(t.alice.client.post(f"{D}/keep.com/renew", json={"years": 1}, headers=key)
                                 for _ in range(5)))
    assert [r.status_code for r in got] == [200] * 5, [r.text for r in got]
    assert _renewals(registrar, "keep.com") == [1400, 1400]
    expires = next(d for d in registrar.domains() if d["name"] == "keep.com")["expiresAt"]
    assert {r.json()["expiresAt"][:19] for r in got} == {expires[:19]}
    # Later, the same request again (a lost answer): answered, not charged.
    again = await t.alice.client.post(f"{D}/keep.com/renew", json={"years": 1}, headers=key)
    assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true", again.text
    assert_error(await t.alice.client.post(f"{D}/keep.com/renew", json={"years": 2}, headers=key), 409,
                 "idempotency_key_reused")
    assert _renewals(registrar, "keep.com") == [1400, 1400]
    assert await _events(t.alice, "domain.renew") == [
        ("domain.renew", "keep.com", {"name": "keep.com", "years": 1, "priceCents": 1400})] * 2
    assert (await _history(t.vic, "keep.com")).count("renew") == 2


@pytest.fixture
async def patient_dsvc(dns_settings: Settings, pdns: Pdns, registrar: FakeRegistrar) -> AsyncIterator[Svc]:
    """dsvc waiting as long as the fake holds a call (dsvc gives up after 2 s)."""
    async with domains_svc(dns_settings, pdns, registrar, registrar_timeout=90.0) as running:
        yield running


async def test_concurrent_renews_join_the_one_in_flight(patient_dsvc: Svc, registrar: FakeRegistrar) -> None:
    """Five renews without a key, all at the registrar at once (each carried out, its answer held):
    one renewal charged, one event with its price, one history line."""
    t = await make_team(patient_dsvc)
    assert (await t.alice.client.post(D, json={"name": "held.com", "contact": CONTACT})).status_code == 201
    registrar.fail("renew", "lost", times=5)
    asked = [asyncio.create_task(t.alice.client.post(f"{D}/held.com/renew", json={"years": 2})) for _ in range(5)]
    await until(lambda: registrar.holding() == 5, what="five renewals held at the registrar")
    registrar.release()
    got = await asyncio.gather(*asked)
    assert [r.status_code for r in got] == [200] * 5, [r.text for r in got]
    assert _renewals(registrar, "held.com") == [2800]
    assert await _events(t.alice, "domain.renew") == [
        ("domain.renew", "held.com", {"name": "held.com", "years": 2, "priceCents": 2800})]
    assert (await _history(t.vic, "held.com")).count("renew") == 1
    # The next renew is a renewal of its own: charged again.
    assert (await t.alice.client.post(f"{D}/held.com/renew", json={"years": 1})).status_code == 200
    assert _renewals(registrar, "held.com") == [2800, 1400]
