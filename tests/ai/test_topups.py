"""Buying AI credit through the fake Polar (a real HTTP server): a checkout for a tier, the balance
rising only on order.paid and once per order, and the auto top-up an org consents to, charged off
session, with a decline that stops it instead of a storm of charges (docs/ai.md)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from svc.adapters.billing.fake import FakePolar
from svc.kit.clock import utcnow
from svc.models import AICredit, AILedgerEntry, AIReservation, AuditEvent, Job, Notification, Org
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, assert_error, run_due_jobs
from tests.support.billing import billed_svc, pay
from tests.support.team import Team, make_team

FIVE = 500_000_000


@pytest.fixture
async def billed(settings: Settings) -> AsyncIterator[tuple[Svc, FakePolar]]:
    async with billed_svc(settings) as running:
        yield running


async def _credit(team: Team) -> dict[str, object]:
    r = await team.bob.client.get("/v1/orgs/acme/ai/credit")
    assert r.status_code == 200, r.text
    return dict(r.json())


async def _ledger_sum(svc: Svc) -> tuple[int, int]:
    async with svc.ctx.db.transaction(write=False) as s:
        total = int(await s.scalar(select(func.coalesce(func.sum(AILedgerEntry.micro_cents), 0))) or 0)
        balance = int(await s.scalar(select(AICredit.balance_micro_cents)) or 0)
    return total, balance


async def _buy(svc: Svc, fake: FakePolar, team: Team, micro_cents: int = FIVE, price: str = "$5") -> None:
    r = await team.alice.client.post("/v1/orgs/acme/ai/credit/checkout",
                                     json={"microCents": micro_cents, "returnTo": "http://svc.test/acme/ai"})
    assert r.status_code == 200, r.text
    paid = await pay(r.json()["url"], price=price)
    assert paid.status_code == 303
    await fake.drain()


async def _adjust(svc: Svc, micro_cents: int) -> None:
    from svc.domains.ai import service

    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        org = (await uow.session.scalars(select(Org).where(Org.slug == "acme"))).one()
        await service.adjust(uow, org, micro_cents, "test")


async def test_credit_is_bought_at_a_checkout_and_rises_once_per_order(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    team = await make_team(svc)
    body = {"microCents": FIVE, "returnTo": "http://svc.test/acme/ai"}
    # Bad input changes nothing: a tier not on the list, a returnTo elsewhere, a member who is no admin.
    assert_error(await team.alice.client.post("/v1/orgs/acme/ai/credit/checkout", json=body | {"microCents": 7}),
                 400, "bad_request")
    r = await team.alice.client.post("/v1/orgs/acme/ai/credit/checkout", json=body | {"returnTo": "https://x.example/"})
    assert r.status_code == 400 and r.json()["details"]["errors"][0]["field"] == "returnTo"
    assert (await team.bob.client.post("/v1/orgs/acme/ai/credit/checkout", json=body)).status_code == 403
    credit = await _credit(team)
    assert credit["balanceMicroCents"] == 0 and credit["hasPaymentMethod"] is False

    # The returning browser is no proof: the balance waits for order.paid.
    fake.state.holding = True
    await _buy(svc, fake, team, 2_000_000_000, "$20")
    assert (await _credit(team))["balanceMicroCents"] == 0
    held = list(fake.state.held)
    fake.state.holding, fake.state.held = False, []
    # The same order, delivered eight times at once under eight webhook ids (the provider's
    # retries, a replayed delivery): credited once.
    copies = [fake.send("order.paid", json.loads(held[0].body)["data"]) for _ in range(8)]
    await fake.drain()
    assert all(c.status == 200 for c in copies)
    credit = await _credit(team)
    assert credit["balanceMicroCents"] == 2_000_000_000 and credit["hasPaymentMethod"] is True
    assert (await fake._deliver(held[0], retry=False)) == 200  # and its own id, late: nothing more
    ledger = (await team.bob.client.get("/v1/orgs/acme/ai/ledger")).json()["entries"]
    assert [(e["kind"], e["microCents"]) for e in ledger] == [("topup", 2_000_000_000)]
    assert await _ledger_sum(svc) == (2_000_000_000, 2_000_000_000)
    async with svc.ctx.db.transaction(write=False) as s:
        actions = set((await s.scalars(select(AuditEvent.action))).all())
    assert {"ai.checkout", "ai.topup"} <= actions


async def test_credit_checkout_without_a_credit_product_is_501(svc: Svc) -> None:
    team = await make_team(svc)
    r = await team.alice.client.post("/v1/orgs/acme/ai/credit/checkout",
                                     json={"microCents": FIVE, "returnTo": "http://svc.test/"})
    assert_error(r, 501, "billing_off")
    # Without billing, the way to credit is the operator's (not the plans' `svc admin plan`).
    assert "svc admin credit ORG +$5" in r.json()["message"] and "admin plan" not in r.json()["message"]


async def test_auto_top_up_charges_below_the_threshold_and_a_decline_stops_it(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    team = await make_team(svc)
    on = {"enabled": True, "thresholdMicroCents": 200_000_000, "amountMicroCents": FIVE}
    # Consent needs a stored payment method: the first top-up is manual.
    assert_error(await team.alice.client.put("/v1/orgs/acme/ai/autotopup", json=on), 409, "no_payment_method")
    await _buy(svc, fake, team)
    for bad in ({"thresholdMicroCents": 0}, {"thresholdMicroCents": FIVE}, {"amountMicroCents": 123},
                {"thresholdMicroCents": None}):
        assert_error(await team.alice.client.put("/v1/orgs/acme/ai/autotopup", json=on | bad), 400, "bad_request")
    assert (await team.bob.client.put("/v1/orgs/acme/ai/autotopup", json=on)).status_code == 403
    r = await team.alice.client.put("/v1/orgs/acme/ai/autotopup", json=on)
    assert r.status_code == 200 and r.json() == {"enabled": True, **{k: v for k, v in on.items() if k != "enabled"}}

    await _adjust(svc, -400_000_000)  # $1 left: below the $2 threshold
    await run_due_jobs(svc)
    await fake.drain()
    credit = await _credit(team)
    assert credit["balanceMicroCents"] == 600_000_000 and credit["autoTopupsToday"] == 1
    ledger = (await team.bob.client.get("/v1/orgs/acme/ai/ledger")).json()["entries"]
    assert [e["kind"] for e in ledger] == ["autotopup", "adjust", "topup"]

    # The saved card stops paying: one declined charge, the admins told, auto top-up paused.
    fake.state.decline_charges = True
    orders_before = len(fake.state.orders)
    await _adjust(svc, -500_000_000)
    await run_due_jobs(svc)
    assert len(fake.state.orders) == orders_before + 1  # one attempt
    async with svc.ctx.db.transaction(write=False) as s:
        kinds = list((await s.scalars(select(Notification.kind))).all())
    assert kinds.count("ai.autotopup.declined") == 1
    # No storm: more spending asks for no more charges.
    for _ in range(3):
        await _adjust(svc, -10_000_000)
    await run_due_jobs(svc)
    assert len(fake.state.orders) == orders_before + 1
    async with svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(Job).where(Job.kind == "ai.autotopup",
                                                                          Job.status == "queued")) == 0
    credit = await _credit(team)
    assert credit["autoTopupsToday"] == 2 and credit["autoTopup"]["enabled"] is True

    # Turned on again (the card fixed): it charges at once, up to the limit of the day.
    fake.state.decline_charges = False
    assert (await team.alice.client.put("/v1/orgs/acme/ai/autotopup", json=on)).status_code == 200
    await run_due_jobs(svc)
    await fake.drain()
    credit = await _credit(team)
    assert credit["autoTopupsToday"] == 3 and credit["balanceMicroCents"] == 100_000_000 - 30_000_000 + FIVE
    await _adjust(svc, -FIVE)  # below again, but three a day is the limit
    await run_due_jobs(svc)
    assert (await _credit(team))["autoTopupsToday"] == 3
    total, balance = await _ledger_sum(svc)
    assert total == balance

    assert (await team.alice.client.put("/v1/orgs/acme/ai/autotopup", json={"enabled": False})).status_code == 204
    assert (await _credit(team))["autoTopup"]["enabled"] is False


async def test_holds_a_crash_left_behind_are_let_go(svc: Svc) -> None:
    from svc.domains.ai import gateway, queries

    await make_team(svc)
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        org = (await uow.session.scalars(select(Org).where(Org.slug == "acme"))).one()
        await queries.add_entry(uow.session, org_id=org.id, kind="adjust", micro_cents=FIVE, now=utcnow())
        credit = await queries.credit(uow.session, org.id, lock=True)
        assert credit is not None
        credit.reserved_micro_cents += 40_000_000
        uow.session.add(AIReservation(id="air_crashed", org_id=org.id, project_id="prj_x", micro_cents=40_000_000,
                                      created_at=utcnow() - timedelta(hours=1)))
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        assert await gateway.release_stale(uow, utcnow() - timedelta(minutes=10)) == 1
    async with svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(AICredit.reserved_micro_cents)) == 0
        assert await s.scalar(select(func.count()).select_from(AIReservation)) == 0
