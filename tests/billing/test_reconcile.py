"""Issue 43, billing: every payment reaches its plan, once, through the fake Polar's own HTTP API
(its `/_fake/...` controls, its checkout page, its signed webhooks) and svc's API, jobs and operator
commands. A pro upgrade whose webhooks are all lost is repaired (the customer found by the org); an
org holds one open checkout or live subscription, and any live one keeps it pro (a duplicate shown
to the operator); an old subscription's late event does not make the org free; the operator's
reconcile under SVC_BILLING=fake asks the fake, and one that cannot ask is an error in words."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from svc.adapters.billing.fake import FakePolar
from svc.domains.billing import service
from svc.domains.billing.kinds import BillingJob
from svc.models import BillingAccount, Org
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, User, run_due_jobs, running_svc
from tests.support.billing import billed_svc, pay
from tests.support.config import configured
from tests.support.team import make_team

RETURN = {"returnTo": "http://svc.test/orgs/acme/billing?paid=1"}


@pytest.fixture
async def billed(settings: Settings) -> AsyncIterator[tuple[Svc, FakePolar]]:
    async with billed_svc(settings.model_copy(update={"operators": "dev:olga"})) as running:
        yield running


async def _org(svc: Svc, slug: str = "acme") -> Org:
    async with svc.ctx.db.transaction(write=False) as s:
        return (await s.scalars(select(Org).where(Org.slug == slug))).one()


async def _account(svc: Svc, slug: str = "acme") -> BillingAccount:
    async with svc.ctx.db.transaction(write=False) as s:
        org = (await s.scalars(select(Org).where(Org.slug == slug))).one()
        account = (await s.scalars(select(BillingAccount).where(BillingAccount.org_id == org.id))).one()
        s.expunge(account)
    return account


async def _polar(fake: FakePolar, path: str, body: dict[str, Any] | None = None) -> Any:
    """The fake Polar's test controls over its HTTP API: POST with a body, else GET."""
    async with httpx.AsyncClient(base_url=fake.url, timeout=30) as polar:
        answer = await (polar.post(path, json=body) if body is not None else polar.get(path))
    assert answer.status_code == 200, answer.text
    return answer.json()


async def _checkout(user: User) -> httpx.Response:
    return await user.client.post("/v1/orgs/acme/billing/checkout", json=RETURN)


async def _run_cycle(svc: Svc) -> None:
    """The daily reconcile, now: its cycle and the reconcile it enqueues for each org."""
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        uow.enqueue(BillingJob.reconcile_cycle, {})
    await run_due_jobs(svc)


async def _reconcile(svc: Svc, slug: str = "acme") -> Any:
    async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
        return await service.reconcile_slug(uow, slug)


async def test_a_pro_upgrade_whose_webhooks_are_all_lost_is_repaired(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    alice = (await make_team(svc)).alice
    await _polar(fake, "/_fake/lose-next", {"count": 3})
    r = await _checkout(alice)
    assert r.status_code == 200, r.text
    assert (await pay(r.json()["url"])).status_code == 303
    await fake.drain()
    lost = [d for d in (await _polar(fake, "/_fake/deliveries"))["deliveries"] if d["status"] == 0]
    assert {d["type"] for d in lost} == {"subscription.created", "subscription.active", "order.paid"}
    # svc heard nothing: free, and no customer id on the account the checkout made.
    assert (await _org(svc)).plan == "free"
    assert (await _account(svc)).customer_id is None

    # The daily cycle compares this org too: its customer is found by the org, and repaired.
    await _run_cycle(svc)
    assert (await _org(svc)).plan == "pro"
    account = await _account(svc)
    assert account.customer_id is not None and account.status == "active"
    status = (await alice.client.get("/v1/orgs/acme/billing")).json()
    assert status["plan"] == "pro" and status["status"] == "active"
    # The operator's check now says so.
    result = await _reconcile(svc)
    assert not result.changed and result.words() == "acme: in step with the provider, still on the pro plan."


async def test_one_open_checkout_or_live_subscription_and_any_live_one_keeps_pro(
        billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    alice = (await make_team(svc)).alice
    # Two checkouts at once, and a third later: one checkout, the same page for all.
    first, second = await asyncio.gather(_checkout(alice), _checkout(alice))
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    url = first.json()["url"]
    assert second.json()["url"] == url
    assert (await _checkout(alice)).json()["url"] == url
    # Paid, and every webhook of it lost: a new checkout is refused in words, and the org repaired.
    await _polar(fake, "/_fake/lose-next", {"count": 3})
    assert (await pay(url)).status_code == 303
    await fake.drain()
    assert (await _org(svc)).plan == "free"
    refused = await _checkout(alice)
    assert refused.status_code == 409 and refused.json()["code"] == "already_pro"
    assert "would charge twice" in refused.json()["message"]
    await run_due_jobs(svc)  # the reconcile the refusal started
    assert (await _org(svc)).plan == "pro"
    first_sub = (await _account(svc)).subscription_id

    # A second subscription made at the provider behind svc's back (the provider lets a customer
    # pay twice): both live, the org pays twice; the reconcile and the operator's page say so.
    async with httpx.AsyncClient(base_url=fake.url, headers={"authorization": f"Bearer {fake.access_token}"}) as api:
        made = await api.post("/v1/checkouts/", json={"products": [fake.product_id], "external_customer_id": "acme",
                                                      "metadata": {"orgSlug": "acme"}})
    assert made.status_code == 201
    assert (await pay(made.json()["url"])).status_code == 303
    await fake.drain()
    account = await _account(svc)
    assert account.live_subscriptions == 2 and (await _org(svc)).plan == "pro"
    result = await _reconcile(svc)
    assert result.duplicate and result.plan == "pro" and first_sub in result.live
    assert "It pays for 2 live subscriptions" in result.words()
    olga = await svc.login("olga")
    page = svc.browser(olga.token)
    html = (await page.get("/operator/billing")).text
    assert "Orgs paying twice" in html and first_sub in html and ">acme<" in html

    # The newer one ends at the provider, its webhook lost: the reconcile reads every subscription,
    # and the older, still live, keeps the org pro (the newest alone would have made it free).
    newer = next(sub_id for sub_id in result.live if sub_id != first_sub)
    await _polar(fake, "/_fake/set-status", {"subscription": newer, "status": "canceled"})
    result = await _reconcile(svc)
    assert result.plan == "pro" and result.live == (first_sub,) and not result.duplicate
    assert (await _org(svc)).plan == "pro" and (await _account(svc)).subscription_id == first_sub
    # Cancel ends the live one; the org stays pro to the period's end.
    status = (await alice.client.post("/v1/orgs/acme/billing/cancel", json={"cancel": True})).json()
    assert status["cancelAtPeriodEnd"] is True and status["plan"] == "pro"
    assert fake.state.subscriptions[first_sub]["cancel_at_period_end"] is True


async def test_a_live_subscription_behind_a_hundred_ended_ones_keeps_pro(billed: tuple[Svc, FakePolar]) -> None:
    """The reconcile reads every page of the customer's subscriptions (Polar lists the newest first,
    a hundred a page): the one live one, the oldest, whose webhooks were all lost, is found behind
    120 that ended."""
    svc, fake = billed
    alice = (await make_team(svc)).alice
    await _polar(fake, "/_fake/lose-next", {"count": 3})
    assert (await pay((await _checkout(alice)).json()["url"])).status_code == 303
    await fake.drain()
    assert (await _org(svc)).plan == "free"
    live = next(iter(fake.state.subscriptions))
    fake.state.holding = True  # svc never hears of the others
    for _ in range(120):
        ended = fake.subscribe("acme", None, {"orgSlug": "acme"})
        ended["status"] = "canceled"
    fake.state.held.clear()
    fake.state.holding = False
    result = await _reconcile(svc)
    assert result.plan == "pro" and result.live == (live,), result
    assert (await _org(svc)).plan == "pro" and (await _account(svc)).subscription_id == live


async def test_an_old_subscriptions_late_event_does_not_make_the_org_free(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    alice = (await make_team(svc)).alice
    url = (await _checkout(alice)).json()["url"]
    assert (await pay(url)).status_code == 303
    await fake.drain()
    old = (await _account(svc)).subscription_id
    assert old is not None and (await _org(svc)).plan == "pro"
    # The old one is revoked (svc told: free), and the org subscribes again.
    await _polar(fake, "/_fake/set-status", {"subscription": old, "status": "canceled", "notify": True})
    await fake.drain()
    assert (await _org(svc)).plan == "free"
    url = (await _checkout(alice)).json()["url"]
    assert (await pay(url)).status_code == 303
    await fake.drain()
    live = (await _account(svc)).subscription_id
    assert live != old and (await _org(svc)).plan == "pro"
    # Now an event of the old one, signed, newer than anything of the live one: the org stays pro.
    await _polar(fake, "/_fake/set-status", {"subscription": old, "status": "canceled", "notify": True})
    await fake.drain()
    assert (await _org(svc)).plan == "pro"
    account = await _account(svc)
    assert account.subscription_id == live and account.status == "active"
    assert account.subscriptions is not None and account.subscriptions[old]["status"] == "canceled"
    events = (await alice.client.get("/v1/orgs/acme/billing")).json()
    assert events["plan"] == "pro" and events["status"] == "active"
    # The live one ends (its own event): free.
    await _polar(fake, "/_fake/set-status", {"subscription": live, "status": "canceled", "notify": True})
    await fake.drain()
    assert (await _org(svc)).plan == "free"


async def test_the_operators_reconcile_under_the_fake_asks_the_fake(settings: Settings) -> None:
    from tests.cli.conftest import clean_env, run_in_process

    # svc serve's way with SVC_BILLING=fake: the fake Polar in its process. Its webhooks go to
    # SVC_PUBLIC_URL, which nothing answers here: every one is lost.
    config = configured(settings, billing="fake", billing_timeout_seconds=5.0)
    env = clean_env() | {"SVC_DATA_DIR": str(settings.data_dir), "SVC_BILLING": "fake"}
    if settings.database_url:
        env["SVC_DATABASE_URL"] = settings.database_url

    def reconcile() -> Any:
        return run_in_process(["admin", "billing", "reconcile", "acme", "--json"], env)

    async with running_svc(config) as svc:
        alice = (await make_team(svc)).alice
        r = await _checkout(alice)
        assert r.status_code == 200, r.text
        assert (await pay(r.json()["url"])).status_code == 303
        assert (await _org(svc)).plan == "free"
        done = await asyncio.to_thread(reconcile)
        assert done.code == 0, done.err
        # Pro by the command's repair, or by svc's own cycle a moment before it (both asked the fake).
        assert done.json()["plan"] == "pro", done.out
        assert (await _org(svc)).plan == "pro"
        # A provider that fails: an error in words, never "in step".
        fake_url = json.loads((settings.data_dir / "fake-polar.json").read_text())["url"]
        async with httpx.AsyncClient(base_url=fake_url) as polar:
            assert (await polar.post("/_fake/api", json={"mode": "error"})).status_code == 200
        failed = await asyncio.to_thread(reconcile)
        assert failed.code == 1 and json.loads(failed.out)["code"] == "billing_unavailable"
        assert "nothing was compared" in json.loads(failed.out)["message"]
    # No svc serve, so no fake to ask: said, not "in step".
    alone = await asyncio.to_thread(reconcile)
    assert alone.code == 1 and json.loads(alone.out)["code"] == "billing_off", alone.out
    assert "none runs on" in json.loads(alone.out)["message"]


async def test_money_events_name_the_amount_and_the_actor(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    alice = (await make_team(svc)).alice
    url = (await _checkout(alice)).json()["url"]
    assert (await pay(url)).status_code == 303
    await fake.drain()
    assert (await alice.client.post("/v1/orgs/acme/billing/cancel", json={"cancel": True})).status_code == 200
    assert (await alice.client.post("/v1/orgs/acme/billing/cancel", json={"cancel": False})).status_code == 200
    events = (await alice.client.get("/v1/orgs/acme/audit", params={"limit": 100})).json()["events"]
    by_action = {e["action"]: e for e in events}
    sub = (await _account(svc)).subscription_id
    checkout = by_action["billing.checkout"]
    assert checkout["actor"] == "dev:alice"
    assert {"plan": "pro", "product": fake.product_id, "amountCents": 2000, "currency": "usd",
            "by": "dev:alice (session)"}.items() <= checkout["payload"].items()
    for action, cancel in (("billing.cancel", True), ("billing.resume", False)):
        event = by_action[action]
        assert event["actor"] == "dev:alice"
        assert {"subscriptions": [sub], "amountCents": 2000, "currency": "usd", "cancelAtPeriodEnd": cancel,
                "by": "dev:alice (session)"}.items() <= event["payload"].items()
        assert event["payload"]["periodEnd"] > "2026"
