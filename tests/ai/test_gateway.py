"""The gateway env.ai's calls go through, against a fake upstream that is a real HTTP server
speaking OpenAI's API: every check before the call, the exact cost after it, and budgets that hold
under concurrent calls (docs/ai.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select

from svc.adapters.ai.fake import FakeUpstream, count_tokens
from svc.models import AICredit, AILedgerEntry, AIReservation, Org, Project
from tests.support.api import Svc, assert_error
from tests.support.bundles import site
from tests.support.config import configured
from tests.support.team import Team, make_team
from tests.support.wait import WAIT_SECONDS, until

MINI_IN, MINI_OUT = 15_000_000, 60_000_000  # openai/gpt-4o-mini, micro-cents a million tokens


async def _ready(svc: Svc, *, ai: bool = True, credit: int = 500_000_000) -> tuple[Team, str]:
    """acme's project "bot", its bundle declaring ai, granted, and the org's credit."""
    from svc.domains.ai import service
    from svc.uow import Tx, unit_of_work

    team = await make_team(svc, project="bot")
    r = await team.bob.client.post("/v1/orgs/acme/projects/bot/deployments", content=site(svc_json={"ai": ai}),
                                   headers={"content-type": "application/gzip"})
    assert r.status_code == 201, r.text
    assert (await team.bob.client.post("/v1/orgs/acme/projects/bot/ai")).status_code == 200
    async with svc.ctx.db.transaction(write=False) as s:
        org = (await s.scalars(select(Org).where(Org.slug == "acme"))).one()
        project_id = str(await s.scalar(select(Project.id).where(Project.name == "bot")))
    if credit:
        async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
            await service.adjust(uow, await uow.session.get(Org, org.id), credit, "test credit")
    return team, project_id


async def _call(svc: Svc, project_id: str, body: dict[str, Any], token: str = "runtime-token-of-the-test") -> Any:
    return await svc.anon.post(f"/v1/runtime/projects/{project_id}/ai/chat/completions", json=body,
                               headers={"X-Svc-Runtime-Token": token})


def _chat(text: str, **more: Any) -> dict[str, Any]:
    return {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": text}], **more}


async def _money(svc: Svc) -> tuple[int, int, int]:
    """The ledger's sum, how far the balance is from it, and the holds, once the answered calls have
    settled (an answer goes back before its settlement lands)."""
    from svc.domains.ai import gateway

    await gateway.drain(svc.ctx)
    async with svc.ctx.db.transaction(write=False) as s:
        ledger = int(await s.scalar(select(func.coalesce(func.sum(AILedgerEntry.micro_cents), 0))) or 0)
        credit = (await s.scalars(select(AICredit))).one_or_none()
        held = int(await s.scalar(select(func.count()).select_from(AIReservation)) or 0)
        if credit is None:  # no amount ever moved
            return ledger, 0, held
        return ledger, credit.balance_micro_cents - ledger + credit.reserved_micro_cents, held


async def test_a_call_is_forwarded_and_charged_its_exact_cost(svc: Svc, upstream: FakeUpstream) -> None:
    team, project_id = await _ready(svc)
    r = await _call(svc, project_id, _chat("hello there world", max_tokens=10))
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["choices"][0]["message"]["content"] == "echo: hello there world"
    assert answer["model"] == "openai/gpt-4o-mini"
    assert upstream.state.calls[-1]["max_tokens"] == 10 and upstream.state.calls[-1]["stream"] is False
    prompt = count_tokens([{"role": "user", "content": "hello there world"}])
    cost = -(-(prompt * MINI_IN + 4 * MINI_OUT) // 1_000_000)
    assert answer["usage"] == {"prompt_tokens": prompt, "completion_tokens": 4, "total_tokens": prompt + 4}
    ledger, drift, held = await _money(svc)
    assert ledger == 500_000_000 - cost and drift == 0 and held == 0  # the ledger sums to the balance
    entry = (await team.bob.client.get("/v1/orgs/acme/ai/ledger?limit=1")).json()["entries"][0]
    assert entry["kind"] == "call" and entry["microCents"] == -cost
    assert entry["project"] == "bot" and entry["model"] == "openai/gpt-4o-mini"
    status = (await team.vic.client.get("/v1/orgs/acme/projects/bot/ai")).json()
    assert status["spentMicroCents24h"] == cost and status["balanceMicroCents"] == 500_000_000 - cost


async def test_every_check_comes_before_the_call(svc: Svc, upstream: FakeUpstream) -> None:
    team, project_id = await _ready(svc, credit=0)
    assert_error(await _call(svc, project_id, _chat("hi"), token="wrong"), 403, "forbidden")
    assert_error(await _call(svc, project_id, _chat("hi")), 402, "insufficient_credit")
    assert_error(await _call(svc, project_id, _chat("hi") | {"model": "gpt-5-anything"}), 400, "unknown_model")
    assert_error(await _call(svc, project_id, {"model": "openai/gpt-4o-mini", "messages": []}), 400, "bad_request")
    # The free plan's maxOutputTokens is 4,096.
    assert_error(await _call(svc, project_id, _chat("hi", max_tokens=5000)), 400, "ai_cap_exceeded")
    assert_error(await _call(svc, project_id, _chat("hi", max_tokens=0)), 400, "bad_request")
    assert (await team.alice.client.delete("/v1/orgs/acme/projects/bot/ai")).status_code == 204
    assert_error(await _call(svc, project_id, _chat("hi")), 403, "ai_not_granted")
    svc.ctx.adapters.ai = {}
    assert (await team.bob.client.post("/v1/orgs/acme/projects/bot/ai")).status_code == 200
    assert_error(await _call(svc, project_id, _chat("hi")), 503, "ai_unavailable")
    assert upstream.state.calls == []  # none of them reached the provider
    ledger, drift, held = await _money(svc)
    assert (ledger, drift, held) == (0, 0, 0)


async def test_a_bundle_that_does_not_declare_ai_gets_no_calls(svc: Svc, upstream: FakeUpstream) -> None:
    _, project_id = await _ready(svc, ai=False)
    assert_error(await _call(svc, project_id, _chat("hi")), 403, "ai_not_declared")


async def test_a_failed_call_costs_nothing(svc: Svc, upstream: FakeUpstream) -> None:
    _, project_id = await _ready(svc)
    upstream.state.mode = "fail"
    assert_error(await _call(svc, project_id, _chat("hi")), 502, "ai_upstream_error")
    ledger, drift, held = await _money(svc)
    assert (ledger, drift, held) == (500_000_000, 0, 0)


@pytest.mark.parametrize("bound", ["daily cap", "balance"])
async def test_concurrent_calls_hold_the_budget_and_the_ledger_sums(svc: Svc, upstream: FakeUpstream, store: str,
                                                                   bound: str) -> None:
    # openai/gpt-4o: $10 a million output tokens, so a call's worst case (4,096 tokens out) is about
    # 4 cents: 24 fit under the free plan's $1 a day; 20 cents of credit hold 4.
    credit = 300_000_000 if bound == "daily cap" else 20_000_000
    _, project_id = await _ready(svc, credit=credit)
    body = _chat("one two three", max_tokens=4096) | {"model": "openai/gpt-4o"}
    size = len('[{"role": "user", "content": "one two three"}]') + 8
    worst = -(-(size * 250_000_000 + 4096 * 1_000_000_000) // 1_000_000)
    limit = 100_000_000 if bound == "daily cap" else credit
    calls = 50 if store == "postgres" else 8
    upstream.state.gate = asyncio.Event()  # the provider answers none until every call was admitted or refused
    calling = [asyncio.create_task(_call(svc, project_id, body)) for _ in range(calls)]
    await until(lambda: len(upstream.state.calls) + sum(task.done() for task in calling) == calls,
                what="every call admitted or refused")
    upstream.state.gate.set()
    answers = await asyncio.gather(*calling)
    codes = [a.status_code for a in answers]
    refused = 429 if bound == "daily cap" else 402
    assert set(codes) <= {200, refused}, codes
    ok = codes.count(200)
    assert 1 <= ok <= max(limit // worst, 1)  # never more in flight than their worst cases fit
    if calls * worst > limit:
        assert codes.count(refused) >= 1
    ledger, drift, held = await _money(svc)
    cost = -(-(count_tokens(body["messages"]) * 250_000_000 + 4 * 1_000_000_000) // 1_000_000)
    assert drift == 0 and held == 0
    assert ledger == credit - ok * cost  # each answered call charged once, exactly


async def test_a_call_the_worker_gives_up_on_still_settles(svc: Svc, upstream: FakeUpstream) -> None:
    _, project_id = await _ready(svc)
    upstream.state.gate = asyncio.Event()
    calling = asyncio.create_task(_call(svc, project_id, _chat("hello there", max_tokens=10)))
    await until(lambda: upstream.state.calls, what="the call at the provider")
    calling.cancel()  # the worker's request goes away while the provider is answering
    with pytest.raises(asyncio.CancelledError):
        await calling
    upstream.state.gate.set()
    cost = -(-(count_tokens([{"role": "user", "content": "hello there"}]) * MINI_IN + 3 * MINI_OUT) // 1_000_000)

    async def settled() -> bool:  # the call goes on, and settles: no hold is left, the answer is paid for
        ledger, _, held = await _money(svc)
        return held == 0 and ledger == 500_000_000 - cost

    await until(settled, what="the call's settlement")
    # Read again once settled (PostgreSQL's statements each see the latest commit: a read during
    # the settlement can straddle it).
    assert await _money(svc) == (500_000_000 - cost, 0, 0)


async def _stream(svc: Svc, project_id: str, body: dict[str, Any]) -> tuple[int, list[Any]]:
    """A streamed call: its status and its events (the JSON of each, or "[DONE]")."""
    import json

    events: list[Any] = []
    async with svc.anon.stream("POST", f"/v1/runtime/projects/{project_id}/ai/chat/completions", json=body,
                               headers={"X-Svc-Runtime-Token": "runtime-token-of-the-test"}) as answer:
        if answer.status_code != 200:
            await answer.aread()
            return answer.status_code, [answer.json()]
        async for line in answer.aiter_lines():
            if line.startswith("data: "):
                data = line[len("data: "):]
                events.append(data if data == "[DONE]" else json.loads(data))
    return answer.status_code, events


def _text(events: list[Any]) -> str:
    return "".join(c["delta"].get("content") or "" for e in events if isinstance(e, dict)
                   for c in e.get("choices") or [])


async def test_a_streamed_call_is_relayed_and_charged_the_usage_it_reports(svc: Svc, upstream: FakeUpstream) -> None:
    _, project_id = await _ready(svc)
    status, events = await _stream(svc, project_id, _chat("stream me please", stream=True))
    assert status == 200, events
    assert _text(events) == "echo: stream me please" and events[-1] == "[DONE]"
    assert all(e["model"] == "openai/gpt-4o-mini" for e in events[:-1])
    assert not any(e.get("usage") for e in events[:-1])  # the worker did not ask for it
    assert upstream.state.calls[-1]["stream_options"] == {"include_usage": True}  # svc did
    cost = -(-(count_tokens([{"role": "user", "content": "stream me please"}]) * MINI_IN + 4 * MINI_OUT)
             // 1_000_000)
    assert await _money(svc) == (500_000_000 - cost, 0, 0)

    status, events = await _stream(svc, project_id, _chat("again", stream=True,
                                                          stream_options={"include_usage": True}))
    assert status == 200 and events[-2]["usage"]["completion_tokens"] == 2  # asked for: passed on


async def test_a_stream_cut_off_midway_is_charged_for_what_was_delivered(svc: Svc, upstream: FakeUpstream) -> None:
    _, project_id = await _ready(svc)
    upstream.state.mode, upstream.state.cut_after = "cut", 2
    status, events = await _stream(svc, project_id, _chat("one two three four five", stream=True))
    assert status == 200
    assert _text(events) == "echo: one"  # two events of text, then the provider's connection ended
    assert events[-1]["error"]["code"] == "ai_upstream_error"
    size = len('[{"role": "user", "content": "one two three four five"}]')
    cost = -(-(-(-size // 4) * MINI_IN + 2 * MINI_OUT) // 1_000_000)
    assert await _money(svc) == (500_000_000 - cost, 0, 0)


async def test_a_stream_that_fails_at_once_costs_nothing(svc: Svc, upstream: FakeUpstream) -> None:
    _, project_id = await _ready(svc)
    upstream.state.mode = "fail"
    status, events = await _stream(svc, project_id, _chat("hi", stream=True))
    assert status == 502 and events[0]["code"] == "ai_upstream_error"
    assert await _money(svc) == (500_000_000, 0, 0)
    status, events = await _stream(svc, project_id, _chat("hi", stream=True, max_tokens=9999))
    assert status == 400 and events[0]["code"] == "ai_cap_exceeded"  # checked before the stream starts


async def test_a_development_server_answers_from_the_fake_model(settings: Any) -> None:
    from svc.adapters.ai import start_fake_upstream

    lanes: dict[str, Any] = {}
    assert await start_fake_upstream(configured(settings), lanes) is None and lanes == {}  # only when asked
    fake = await start_fake_upstream(configured(settings, ai_fake=True), lanes)
    assert fake is not None and set(lanes) == {"frontier", "value"}
    try:
        answer = await lanes["value"].complete(_chat("hi there"))
        assert answer.body["choices"][0]["message"]["content"] == "echo: hi there" and answer.output_tokens == 3
    finally:
        for lane in lanes.values():
            await lane.aclose()
        await fake.stop()


async def test_one_apps_drain_waits_for_its_own_settlements_only(tmp_path: Any) -> None:
    """Two apps in one process (the tests run several): the settlements under way are each app's,
    so one stopping (its drain) neither waits for the other's nor leaves its own behind."""
    from typing import cast

    from svc.adapters.mail.eml import EmlDirectorySender
    from svc.context import Adapters, AppContext
    from svc.db import Database
    from svc.domains.ai import gateway
    from svc.settings import Settings

    one, two = (AppContext(settings=Settings(data_dir=tmp_path / name), db=cast(Database, None),
                           adapters=Adapters(mail=EmlDirectorySender(tmp_path / name / "mail")))
                for name in ("one", "two"))
    others_landed, own_may_land = asyncio.Event(), asyncio.Event()
    others = gateway._finish(two, others_landed.wait())  # the other app's, still under way
    own = gateway._finish(one, own_may_land.wait())
    draining = asyncio.create_task(gateway.drain(one))
    await asyncio.sleep(0)  # a turn of the loop (no time): the drain has started, and waits
    assert not draining.done(), "the drain did not wait for its own app's settlement"
    own_may_land.set()
    await asyncio.wait_for(draining, WAIT_SECONDS)  # not held by the other app's
    assert own.done() and not others.done()
    others_landed.set()
    await asyncio.wait_for(gateway.drain(two), WAIT_SECONDS)
    assert others.done()
