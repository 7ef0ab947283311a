"""Billing against the fake Polar (a real HTTP server speaking Polar's API, read by Polar's own SDK;
its webhooks signed as Polar signs them and sent back to svc): checkout -> the signed webhook ->
pro, limits with it; cancel and resume; redeliveries applied once (8 at once); events out of order;
and every refusal of a bad delivery with nothing changed, on both stores."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from standardwebhooks import Webhook

from svc.adapters.billing.fake import FakePolar
from svc.app import default_adapters
from svc.domains.billing.kinds import BillingJob
from svc.models import BillingEvent, Org
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, run_due_jobs, running_svc
from tests.support.billing import SECRET, billed_svc, pay
from tests.support.team import make_team


@pytest.fixture
async def billed(settings: Settings) -> AsyncIterator[tuple[Svc, FakePolar]]:
    async with billed_svc(settings) as running:
        yield running


async def _org(svc: Svc, slug: str = "acme") -> Org:
    async with svc.ctx.db.transaction(write=False) as s:
        return (await s.scalars(select(Org).where(Org.slug == slug))).one()


async def _inbox(svc: Svc) -> dict[str, BillingEvent]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.scalars(select(BillingEvent))).all()
        for row in rows:
            s.expunge(row)
    return {row.webhook_id: row for row in rows}


async def _pay(fake: FakePolar, url: str, card: str = "4242 4242 4242 4242") -> httpx.Response:
    return await pay(url, card)


async def test_checkout_webhook_pro_cancel_resume(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    team = await make_team(svc)
    alice, bob = team.alice, team.bob  # admin, member
    status = (await alice.client.get("/v1/orgs/acme/billing")).json()
    assert status["plan"] == "free" and status["enabled"] is True and status["sandbox"] is True
    assert status["limits"]["free"]["projects"] == 3 and status["limits"]["pro"]["projects"] == 100
    assert status["status"] is None and status["periodEnd"] is None

    # Bad input: returnTo outside SVC_PUBLIC_URL; a member is not an admin; no history yet.
    r = await alice.client.post("/v1/orgs/acme/billing/checkout", json={"returnTo": "https://evil.example/"})
    assert r.status_code == 400 and r.json()["details"]["errors"][0]["field"] == "returnTo"
    assert (await bob.client.post("/v1/orgs/acme/billing/checkout",
                                  json={"returnTo": "http://svc.test/"})).status_code == 403
    assert (await alice.client.post("/v1/orgs/acme/billing/portal", json={})).status_code == 404
    assert (await alice.client.post("/v1/orgs/acme/billing/session")).status_code == 404
    r = await alice.client.post("/v1/orgs/acme/billing/cancel", json={"cancel": True})
    assert r.status_code == 409 and r.json()["code"] == "not_pro"

    url = (await alice.client.post("/v1/orgs/acme/billing/checkout",
                                   json={"returnTo": "http://svc.test/orgs/acme/billing?paid=1"})).json()["url"]
    # Checkout alone changes nothing; a declined card neither.
    declined = await _pay(fake, url, "4000 0000 0000 0002")
    assert declined.status_code == 402 and "declined" in declined.text
    assert (await _org(svc)).plan == "free"
    paid = await _pay(fake, url)
    assert paid.status_code == 303 and paid.headers["location"] == "http://svc.test/orgs/acme/billing?paid=1"
    await fake.drain()  # the webhooks, delivered
    org = await _org(svc)
    assert org.plan == "pro"
    status = (await alice.client.get("/v1/orgs/acme/billing")).json()
    assert status["plan"] == "pro" and status["status"] == "active" and status["periodEnd"] > "2026"
    assert status["cancelAtPeriodEnd"] is False
    inbox = await _inbox(svc)
    outcomes = sorted((row.type, row.outcome) for row in inbox.values())
    assert ("subscription.active", "applied") in outcomes and ("order.paid", "ignored") in outcomes
    # The limit follows the plan: a fourth project is allowed now.
    for name in ("p1", "p2", "p3", "p4"):
        assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": name})).status_code == 201
    r = await alice.client.post("/v1/orgs/acme/billing/checkout", json={"returnTo": "http://svc.test/"})
    assert r.status_code == 409 and r.json()["code"] == "already_pro"
    # A pro org cannot be deleted while it pays.
    r = await alice.client.request("DELETE", "/v1/orgs/acme", json={"confirm": "acme"})
    assert r.status_code == 409 and r.json()["code"] == "active_subscription"

    # Portal and session: the provider's one-time URL, a token for an hour.
    portal = (await alice.client.post("/v1/orgs/acme/billing/portal", json={"returnTo": "http://svc.test/"})).json()
    assert portal["url"].startswith(fake.url + "/portal?token=")
    session = (await alice.client.post("/v1/orgs/acme/billing/session")).json()
    assert session["token"] and session["expiresAt"] > datetime.now(UTC).isoformat()[:16]

    # Cancel at the period's end: still pro, the row says so at once; resume reverses it.
    status = (await alice.client.post("/v1/orgs/acme/billing/cancel", json={"cancel": True})).json()
    assert status["plan"] == "pro" and status["cancelAtPeriodEnd"] is True
    await fake.drain()
    assert (await _org(svc)).plan == "pro"
    status = (await alice.client.post("/v1/orgs/acme/billing/cancel", json={"cancel": False})).json()
    assert status["cancelAtPeriodEnd"] is False
    await fake.drain()
    assert (await alice.client.get("/v1/orgs/acme/billing")).json()["cancelAtPeriodEnd"] is False

    # The provider ends it (the period is over): the webhook makes the org free; its data stays,
    # and it is told what is over the free plan's limits.
    [sub] = fake.state.subscriptions.values()
    sub["status"] = "canceled"
    fake._touch(sub)
    fake.send("subscription.updated", fake._subscription_json(sub))
    await fake.drain()
    assert (await _org(svc)).plan == "free"
    projects = (await alice.client.get("/v1/orgs/acme/projects")).json()["projects"]
    assert len(projects) >= 4
    notes = (await alice.client.get("/v1/orgs/acme/notifications")).json()["notifications"]
    assert any(n["kind"] == "billing.downgraded" and "over the free plan's 3" in n["message"] for n in notes)
    r = await alice.client.post("/v1/orgs/acme/projects", json={"name": "p5"})
    assert r.status_code == 409 and r.json()["code"] == "project_limit"


def _signed(body: str, *, webhook_id: str, when: datetime | None = None, secret: str = SECRET) -> dict[str, str]:
    when = when or datetime.now(UTC)
    hook = Webhook(base64.b64encode(secret.encode()).decode())
    return {"webhook-id": webhook_id, "webhook-timestamp": str(int(when.timestamp())),
            "webhook-signature": hook.sign(webhook_id, when, body), "content-type": "application/json"}


def _event(fake: FakePolar, event_type: str, **changes: Any) -> str:
    subs = list(fake.state.subscriptions.values())
    data = fake._subscription_json(subs[0]) | changes
    return json.dumps({"type": event_type, "timestamp": datetime.now(UTC).isoformat(), "api_version": "2026-10",
                       "data": data})


async def test_bad_deliveries_are_refused_and_change_nothing(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    await make_team(svc)
    fake.subscribe("acme", None, {"orgSlug": "acme"})
    fake.state.deliveries.clear()
    await fake.drain()
    plan_before = (await _org(svc)).plan
    inbox_before = set(await _inbox(svc))
    body = _event(fake, "subscription.updated", status="canceled", modified_at="2099-01-01T00:00:00Z")
    hook = "/v1/hooks/polar"
    cases = [
        (body + " ", _signed(body, webhook_id="msg_tampered")),  # tampered body
        (body, _signed(body, webhook_id="msg_secret", secret="whsec_another")),  # wrong secret
        (body, {"content-type": "application/json"}),  # missing headers
        (body, _signed(body, webhook_id="msg_old", when=datetime.now(UTC) - timedelta(minutes=6))),
        (body, _signed(body, webhook_id="msg_future", when=datetime.now(UTC) + timedelta(minutes=6))),
    ]
    for content, headers in cases:
        r = await svc.anon.post(hook, content=content, headers=headers)
        assert r.status_code == 403 and r.json()["code"] == "bad_signature", (headers, r.text)
    r = await svc.anon.post(hook, content="{not json", headers=_signed("{not json", webhook_id="msg_json"))
    assert r.status_code == 400
    assert (await _org(svc)).plan == plan_before and set(await _inbox(svc)) == inbox_before
    # An unknown type: 200, kept as ignored, nothing applied.
    unknown = json.dumps({"type": "benefit.created", "data": {"id": "x"}})
    r = await svc.anon.post(hook, content=unknown, headers=_signed(unknown, webhook_id="msg_unknown"))
    assert r.status_code == 200 and r.json() == {"applied": False}
    assert (await _inbox(svc))["msg_unknown"].outcome == "ignored"


async def test_redeliveries_apply_once_and_old_events_never_win(billed: tuple[Svc, FakePolar]) -> None:
    svc, fake = billed
    await make_team(svc)
    fake.subscribe("acme", None, {"orgSlug": "acme"})
    await fake.drain()
    assert (await _org(svc)).plan == "pro"
    hook = "/v1/hooks/polar"
    # Out of order: the cancellation (newer) arrives first, then an older "active".
    newer = _event(fake, "subscription.revoked", status="canceled", modified_at="2099-01-02T00:00:00Z")
    older = _event(fake, "subscription.updated", status="active", modified_at="2099-01-01T00:00:00Z")
    r = await svc.anon.post(hook, content=newer, headers=_signed(newer, webhook_id="msg_newer"))
    assert r.json() == {"applied": True} and (await _org(svc)).plan == "free"
    r = await svc.anon.post(hook, content=older, headers=_signed(older, webhook_id="msg_older"))
    assert r.json() == {"applied": False} and (await _org(svc)).plan == "free"
    assert (await _inbox(svc))["msg_older"].outcome == "stale"

    # Eight copies of one delivery at once, four at each of two replicas of svc on the one store
    # (each writes the copies it has at once in one transaction): one applies, the others are
    # duplicates.
    again = _event(fake, "subscription.updated", status="active", modified_at="2099-01-03T00:00:00Z")
    headers = _signed(again, webhook_id="msg_again")
    adapters = default_adapters(svc.ctx.config)
    adapters.billing = svc.ctx.adapters.billing
    async with running_svc(svc.ctx.config, adapters) as replica:
        answers = await asyncio.gather(*(at.anon.post(hook, content=again, headers=headers)
                                         for at in (svc, replica) * 4))
    assert [a.status_code for a in answers] == [200] * 8
    assert sum(a.json()["applied"] for a in answers) == 1
    row = (await _inbox(svc))["msg_again"]
    assert row.outcome == "applied" and row.deliveries == 8
    assert (await _org(svc)).plan == "pro"


async def test_billing_off_and_an_unreachable_provider(settings: Settings, billed: tuple[Svc, FakePolar]) -> None:
    async with running_svc(settings) as off:  # the same store, billing off
        r = await off.anon.post("/v1/hooks/polar", content="{}", headers=_signed("{}", webhook_id="m1"))
        assert r.status_code == 501 and r.json()["code"] == "billing_off"
    svc, fake = billed
    alice = (await make_team(svc)).alice
    assert (await alice.client.get("/v1/orgs/acme/billing")).json()["enabled"] is True
    await fake.control_mode("hang")
    r = await alice.client.post("/v1/orgs/acme/billing/checkout", json={"returnTo": "http://svc.test/"})
    assert r.status_code == 502 and r.json()["code"] == "billing_unavailable"
    await fake.control_mode("error")
    r = await alice.client.post("/v1/orgs/acme/billing/checkout", json={"returnTo": "http://svc.test/"})
    assert r.status_code == 502
    # Off, every billing route says so; reading the status says enabled false.
    async with running_svc(settings) as off:
        bob = await off.login("alice")
        assert (await bob.client.get("/v1/orgs/acme/billing")).json()["enabled"] is False
        r = await bob.client.post("/v1/orgs/acme/billing/checkout", json={"returnTo": "http://svc.test/"})
        assert r.status_code == 501 and r.json()["code"] == "billing_off"


async def test_a_lost_webhook_is_repaired_and_a_failed_one_replayed(billed: tuple[Svc, FakePolar]) -> None:
    from tests.cli.conftest import clean_env, run_in_process

    svc, fake = billed
    alice = (await make_team(svc)).alice
    [sub] = [fake.subscribe("acme", None, {"orgSlug": "acme"})]
    await fake.drain()
    org = await _org(svc)
    assert org.plan == "pro"
    # The provider ends the subscription, and its webhook is lost.
    fake.state.lose_next = 5
    sub["status"] = "canceled"
    fake._touch(sub)
    fake.send("subscription.updated", fake._subscription_json(sub))
    assert (await _org(svc)).plan == "pro"
    # The reconcile (the daily cycle's job for this org) reads the provider and repairs it.
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        uow.enqueue(BillingJob.reconcile, {"org_id": org.id})
    await run_due_jobs(svc)
    assert (await _org(svc)).plan == "free"
    assert (await alice.client.get("/v1/orgs/acme/billing")).json()["plan"] == "free"

    # A delivery for an org that does not exist yet: kept as failed, in words; replayed by an
    # operator once the org exists, it applies.
    later = json.dumps({"type": "subscription.active", "timestamp": datetime.now(UTC).isoformat(),
                        "api_version": "2026-10",
                        "data": fake._subscription_json(sub) | {"status": "active", "metadata": {"orgSlug": "later"},
                                                               "modified_at": "2099-01-01T00:00:00Z"}})
    r = await svc.anon.post("/v1/hooks/polar", content=later, headers=_signed(later, webhook_id="msg_later"))
    assert r.json() == {"applied": False}
    row = (await _inbox(svc))["msg_later"]
    assert row.outcome == "failed" and row.detail == "no org 'later' on this svc"
    assert (await alice.client.post("/v1/orgs", json={"slug": "later"})).status_code == 201
    env = clean_env() | {"SVC_DATA_DIR": str(svc.ctx.settings.data_dir)}
    if svc.ctx.settings.database_url:
        env["SVC_DATABASE_URL"] = svc.ctx.settings.database_url
    listed = await asyncio.to_thread(run_in_process, ["admin", "billing", "events", "--json"], env)
    assert listed.code == 0, listed.err
    assert {"webhookId": "msg_later", "outcome": "failed"}.items() <= next(
        e for e in listed.json()["events"] if e["webhookId"] == "msg_later").items()
    replayed = await asyncio.to_thread(run_in_process, ["admin", "billing", "replay", "msg_later", "--json"], env)
    assert replayed.code == 0, replayed.err
    assert replayed.json()["outcome"] == "applied" and replayed.json()["detail"].startswith("replayed")
    assert (await _org(svc, "later")).plan == "pro"
    missing = await asyncio.to_thread(run_in_process, ["admin", "billing", "replay", "msg_none", "--json"], env)
    assert missing.code == 1 and json.loads(missing.out)["code"] == "not_found"


def test_operators_are_named_by_email_or_by_provider_and_subject() -> None:
    settings = Settings(operators=" Ops@Example.com , dev:ada ")
    assert settings.is_operator(email="ops@example.COM", provider="oidc", subject="x1")
    assert settings.is_operator(email=None, provider="dev", subject="ada")
    # The same subject at another provider is somebody else; nobody is an operator by default.
    assert not settings.is_operator(email=None, provider="oidc", subject="ada")
    assert not settings.is_operator(email="ada@example.com", provider="dev", subject="bob")
    assert not Settings().is_operator(email="ops@example.com", provider="dev", subject="ada")


async def test_deliveries_at_once_are_written_together_in_order_and_a_bad_one_fails_alone(
        billed: tuple[Svc, FakePolar], monkeypatch: pytest.MonkeyPatch) -> None:
    from svc.domains.billing import deliveries, service

    svc, fake = billed
    team = await make_team(svc)
    assert (await team.alice.client.post("/v1/orgs", json={"slug": "other"})).status_code == 201
    transactions = 0
    receive = service.receive

    async def counting(uow: Any, deliveries: list[Any]) -> list[bool]:
        nonlocal transactions
        transactions += 1
        if any(d.webhook_id == "msg_bad" for d in deliveries):
            raise RuntimeError("a delivery that cannot be written")
        return await receive(uow, deliveries)

    monkeypatch.setattr(service, "receive", counting)
    fake.subscribe("acme", None, {"orgSlug": "acme"})
    await fake.drain()
    # acme's events are of its own subscription (one org's subscriptions are followed each on its own).
    payloads = {slug: json.loads(_event(fake, "subscription.active", status="active", metadata={"orgSlug": slug},
                                        modified_at="2099-01-01T00:00:00Z",
                                        **({} if slug == "acme" else {"id": f"sub_{slug}"})))
                for slug in ("acme", "other")}
    writer = deliveries.DeliveryWriter(svc.ctx)
    transactions = 0
    good = await asyncio.gather(writer.deliver("msg_a", payloads["acme"] | {"data": payloads["acme"]["data"] | {
        "modified_at": "2099-01-05T00:00:00Z", "status": "canceled"}}), writer.deliver("msg_b", payloads["other"]))
    assert list(good) == [True, True] and transactions == 1  # both in one transaction, both applied
    assert (await _org(svc, "acme")).plan == "free" and (await _org(svc, "other")).plan == "pro"

    transactions = 0
    later = payloads["other"] | {"data": payloads["other"]["data"] | {"modified_at": "2099-01-06T00:00:00Z",
                                                                      "status": "canceled"}}
    results = await asyncio.gather(writer.deliver("msg_bad", payloads["acme"]), writer.deliver("msg_c", later),
                                   return_exceptions=True)
    # The batch failed as a whole, then each went alone: the bad one fails, the other is written.
    assert isinstance(results[0], RuntimeError) and results[1] is True
    assert transactions == 3
    inbox = await _inbox(svc)
    assert "msg_bad" not in inbox and inbox["msg_c"].outcome == "applied"
    assert (await _org(svc, "other")).plan == "free"

    # In one batch, one org's deliveries are decided in order against the state each left: the
    # older of two arriving second is stale; the same id twice is applied once and counted twice.
    transactions = 0
    newer = payloads["acme"] | {"data": payloads["acme"]["data"] | {"modified_at": "2099-01-08T00:00:00Z"}}
    older = payloads["acme"] | {"data": payloads["acme"]["data"] | {"modified_at": "2099-01-07T00:00:00Z",
                                                                    "status": "canceled"}}
    results = await asyncio.gather(writer.deliver("msg_new", newer), writer.deliver("msg_old", older),
                                   writer.deliver("msg_new", newer))
    assert list(results) == [True, False, False] and transactions == 1
    inbox = await _inbox(svc)
    assert inbox["msg_old"].outcome == "stale" and inbox["msg_new"].deliveries == 2
    assert (await _org(svc, "acme")).plan == "pro"

    # Another writer (a replica) keeps a delivery while this one decides it: the insert finds its
    # row, the batch is undone and decided again, and the delivery counts as received twice.
    from svc.domains.billing import queries

    lies = [True]
    truth = queries.received

    async def blind_once(session: Any, webhook_ids: Any) -> set[str]:
        return set() if lies and lies.pop() else await truth(session, webhook_ids)

    monkeypatch.setattr(queries, "received", blind_once)
    transactions = 0
    assert await writer.deliver("msg_new", newer) is False
    assert transactions == 2
    assert (await _inbox(svc))["msg_new"].deliveries == 3
