"""env.ai end to end: a real `svc serve` (edge, workerd) whose AI lanes point at the fake upstream
(a real HTTP server in this process). The chat example (examples/chat) calls the model through
env.ai.chat() and streams through env.ai.fetch(); the grant reaches the running worker with no
redeploy, svc's refusals reach the worker as AIError codes, and the worker never sees a key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.adapters.ai.fake import FakeUpstream, count_tokens
from tests.support import components
from tests.support.bundles import site
from tests.support.serve import Server, svc_serve
from tests.support.wait import until
from tests.workers.test_serve import Project, until_steady

pytestmark = components.WORKERD

EXAMPLE = Path(__file__).parents[2] / "examples" / "chat"
SYSTEM = "You answer in one short paragraph."
MINI_IN, MINI_OUT = 15_000_000, 60_000_000  # openai/gpt-4o-mini, micro-cents a million tokens


def chat_bundle() -> bytes:
    files = {str(p.relative_to(EXAMPLE)): p.read_bytes() for p in EXAMPLE.rglob("*")
             if p.is_file() and p.name != "svc.json"}
    return site(files, svc_json=json.loads((EXAMPLE / "svc.json").read_text()))


@pytest.fixture(scope="module")
async def upstream() -> AsyncIterator[FakeUpstream]:
    fake = FakeUpstream(api_key="sk-the-operators-own")
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory, upstream: FakeUpstream) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path_factory.mktemp("envai"), SVC_WORKER_PROCESSES="1",
                         SVC_AI_FRONTIER_URL=upstream.url, SVC_AI_FRONTIER_KEY=upstream.api_key,
                         SVC_AI_VALUE_URL=upstream.url, SVC_AI_VALUE_KEY=upstream.api_key) as running:
        yield running


@pytest.fixture
async def project(server: Server) -> AsyncIterator[Project]:
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        r = await http.post("/v1/auth/dev/login", json={"subject": "chatter"})
        auth = {"authorization": f"Bearer {r.json()['token']}"}
        r = await http.post("/v1/orgs/chatter/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
        yield Project(server=server, http=http, owner="chatter", auth=auth, host=r.json()["hostname"])


async def _credit(server: Server, amount: str, org: str = "chatter") -> None:
    from tests.cli.conftest import clean_env, run_in_process

    env = clean_env() | {"SVC_DATA_DIR": str(server.data_dir)}
    ran = await asyncio.to_thread(run_in_process, ["admin", "credit", "--json", org, amount, "--reason",
                                                   "test"], env)
    assert ran.code == 0, ran.out


async def _post(project: Project, path: str, body: object) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(f"http://127.0.0.1:{project.server.edge_port}{path}", json=body,
                                 headers={"host": project.host})


async def test_the_chat_example_calls_the_model_through_env_ai(project: Project, upstream: FakeUpstream) -> None:
    assert (await project.deploy(chat_bundle())).status_code == 201
    # Not granted: the worker has no env.ai.
    before = await _post(project, "/api/chat", {"message": "hello"})
    assert before.status_code == 503 and "svc ai grant" in before.json()["error"]

    r = await project.http.post(f"{project.base}/ai", headers=project.auth)
    assert r.status_code == 200, r.text
    # Granted, no credit yet: svc's refusal reaches the worker as an AIError with its code.
    broke = await _post(project, "/api/chat", {"message": "hello"})
    assert broke.status_code == 402 and broke.json()["code"] == "insufficient_credit", broke.text
    assert upstream.state.calls == []

    await _credit(project.server, "+$1")
    answer = await _post(project, "/api/chat", {"message": "hello there"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["reply"] == "echo: hello there"
    assert upstream.state.calls[-1]["max_tokens"] == 300

    async with httpx.AsyncClient(timeout=30) as client:
        async with client.stream("POST", f"http://127.0.0.1:{project.server.edge_port}/api/stream",
                                 json={"message": "stream this"}, headers={"host": project.host}) as streamed:
            assert streamed.status_code == 200
            assert streamed.headers["content-type"].startswith("text/event-stream")
            events = [line.removeprefix("data: ") async for line in streamed.aiter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in json.loads(e)["choices"])
    assert text == "echo: stream this"

    # The worker was charged the exact usage of both calls, and saw no key on the way.
    prompts = [count_tokens([{"role": "system", "content": SYSTEM}, {"role": "user", "content": m}])
               for m in ("hello there", "stream this")]
    costs = [-(-(p * MINI_IN + 3 * MINI_OUT) // 1_000_000) for p in prompts]

    async def both_settled() -> list[dict[str, Any]] | None:  # an answer goes back before its settlement lands
        entries = (await project.http.get("/v1/orgs/chatter/ai/ledger", headers=project.auth)).json()["entries"]
        return entries if len([e for e in entries if e["kind"] == "call"]) == 2 else None

    ledger = await until(both_settled, what="both calls' settlements")
    assert [e["microCents"] for e in ledger if e["kind"] == "call"] == [-costs[1], -costs[0]]
    credit = (await project.http.get("/v1/orgs/chatter/ai/credit", headers=project.auth)).json()
    assert credit["balanceMicroCents"] == 100_000_000 - sum(costs)
    assert upstream.api_key not in project.server.log.read_text()

    # The steady path (the shard's own process) has env.ai as the loading path has it.
    await until_steady(project)
    steady = await _post(project, "/api/chat", {"message": "steady"})
    assert steady.status_code == 200 and steady.json()["reply"] == "echo: steady", steady.text

    # Revoked: the running worker loses env.ai at once.
    assert (await project.http.delete(f"{project.base}/ai", headers=project.auth)).status_code == 204
    after = await _post(project, "/api/chat", {"message": "hello"})
    assert after.status_code == 503


# A worker that hands its request's body to env.ai as it came: what a tenant's code can ask for.
RELAY = b"""export default {
  async fetch(request, env) {
    return env.ai.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" },
                                                   body: await request.text() });
  },
};
"""


async def test_a_worker_cannot_ask_env_ai_for_more_than_is_held(server: Server, upstream: FakeUpstream) -> None:
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        r = await http.post("/v1/auth/dev/login", json={"subject": "bounder"})
        auth = {"authorization": f"Bearer {r.json()['token']}"}
        r = await http.post("/v1/orgs/bounder/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
        project = Project(server=server, http=http, owner="bounder", auth=auth, host=r.json()["hostname"])
        bundle = site({"worker/index.js": RELAY}, svc_json={"project": "relay", "ai": True,
                                                             "compatibilityDate": "2025-06-01"})
        assert (await project.deploy(bundle)).status_code == 201
        assert (await http.post(f"{project.base}/ai", headers=auth)).status_code == 200
        await _credit(server, "+$1", org="bounder")
        messages = [{"role": "user", "content": "write a lot"}]
        calls = len(upstream.state.calls)

        # Twenty choices of a thousand tokens: refused before the provider, in words.
        refused = await _post(project, "/", {"model": "openai/gpt-4o-mini", "messages": messages,
                                             "max_tokens": 1000, "n": 20})
        assert refused.status_code == 400 and refused.json()["code"] == "ai_unbounded_request", refused.text
        assert len(upstream.state.calls) == calls

        # Eight, from a provider that bills every token asked for: held in full, charged in full,
        # and the fields svc does not forward never reach the provider.
        upstream.state.mode = "greedy"
        try:
            answer = await _post(project, "/", {"model": "openai/gpt-4o-mini", "messages": messages,
                                                "max_tokens": 1000, "n": 8, "store": True, "service_tier": "priority"})
        finally:
            upstream.state.mode = "ok"
        assert answer.status_code == 200, answer.text
        sent = upstream.state.calls[-1]
        assert sent["n"] == 8 and sent["max_tokens"] == 1000 and "store" not in sent and "service_tier" not in sent
        cost = -(-(count_tokens(messages) * MINI_IN + 8 * 1000 * MINI_OUT) // 1_000_000)
        for _ in range(300):  # an answer goes back before its settlement lands (milliseconds)
            credit = (await http.get("/v1/orgs/bounder/ai/credit", headers=auth)).json()
            if credit["balanceMicroCents"] != 100_000_000:
                break
            await asyncio.sleep(0.02)
        assert credit["balanceMicroCents"] == 100_000_000 - cost
