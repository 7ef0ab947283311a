"""AI: what svc's gateway adds to a model call, against calling the same upstream directly, in one run.

    .venv/bin/python bench/ai.py [--calls 200] [--rounds 3] [--upstream-ms 100]

The upstream is svc's fake (svc.adapters.ai.fake: a real HTTP server speaking OpenAI's chat
completions, reporting usage) in a process of its own, answering each call after --upstream-ms
(a fast provider's floor; 0 measures the bare overhead). Two paths through svc, each against the
upstream called directly by this process (the peer), the rounds alternating the two:

1. HTTP: the gateway's route (POST /v1/runtime/projects/{id}/ai/chat/completions) on svc's app
   served as `svc serve` serves it (`svc.operator.serve.server_config`), SQLite, the runtime's token
   set: every check, the worst case reserved, the call forwarded, the exact cost settled.
2. env.ai: a real `svc serve` (edge, workerd) running examples/chat, its worker calling
   `env.ai.chat()`; the request goes through the edge to the worker, to svc's gateway, to the
   upstream and back.

For each: latency p50 and p99 of non-streamed calls one at a time, and (HTTP) the time to the
first streamed event. Goals: <= 5 ms added at p50, <= 1.2x at p99."""

from __future__ import annotations

import argparse
import asyncio
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
from harness import PINNED, ApiClient, Server, machine, pct, pin, wait_for_server
from starlette.requests import Request
from starlette.responses import JSONResponse
from tests.support.config import configured

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-runtime-token"
KEY = "sk-bench-upstream"
# The bench calls faster than a plan's maxCallsPerMinute allows (a setting): lifted for its run.
CALLS_PER_MINUTE = 1_000_000
GOAL_P50_MS = 5.0
GOAL_P99 = 1.2
BODY = {"model": "openai/gpt-4o-mini", "max_tokens": 50,
        "messages": [{"role": "user", "content": "hello there, how are you today"}]}


def bundle(example: Path | None, manifest: dict[str, Any]) -> bytes:
    files = {"svc.json": json.dumps(manifest).encode()}
    if example is not None:
        files |= {str(p.relative_to(example)): p.read_bytes() for p in example.rglob("*")
                  if p.is_file() and p.name != "svc.json"}
    else:
        files["assets/index.html"] = b"<h1>bench</h1>"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


# --- the processes ---

def serve_upstream(port_file: Path, delay_ms: float) -> None:
    from svc.adapters.ai.fake import FakeUpstream
    from svc.operator.serve import serve_reporting_port, server_config

    fake = FakeUpstream(api_key=KEY)
    fake.state.delay = delay_ms / 1000
    async def up(_: Any) -> JSONResponse:  # what harness.wait_for_server asks
        return JSONResponse({})

    fake.app.add_route("/v1/config", up)
    asyncio.run(serve_reporting_port(server_config(fake.app, host="127.0.0.1", port=0, log_level="warning"),
                                     port_file))


def serve_svc(port_file: Path, data_dir: Path, upstream: str) -> None:
    """svc's app with its AI lanes on the upstream and a runtime token, as `svc serve` serves it."""
    from svc.app import create_app, default_adapters
    from svc.operator.serve import serve_reporting_port, server_config
    from svc.settings import Settings

    settings = configured(Settings(data_dir=data_dir, enable_dev_auth=True), ai_frontier_url=upstream,
                          ai_frontier_key=KEY, ai_value_url=upstream, ai_value_key=KEY,
                          free_ai_calls_per_minute=CALLS_PER_MINUTE)
    adapters = default_adapters(settings)
    adapters.runtime = SimpleNamespace(token=TOKEN)  # type: ignore[assignment]
    app = create_app(settings, adapters, freeze_startup=True)  # as `svc serve`: start-up kept out of the GC

    @app.post("/bench/echo", include_in_schema=False)  # type: ignore[untyped-decorator,unused-ignore]
    async def echo(request: Request) -> JSONResponse:
        """svc's HTTP server with no gateway: the body back (what the same server costs a request)."""
        return JSONResponse(await request.json())

    asyncio.run(serve_reporting_port(server_config(app, host="127.0.0.1", port=0, log_level="warning"), port_file))


# svc (and the edge and workerd it runs) on core 0; this process and the upstream on core 1: the
# scheduler moving them about doubled the figures from one run to the next.
SVC_CORE, LOAD_CORE = 0, 1



def start(args: list[str], port_file: Path, core: int) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pin(proc.pid, core)
    return proc, wait_for_server(proc, port_file)


def credit(data_dir: Path, org: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")} | {"SVC_DATA_DIR": str(data_dir)}
    subprocess.run([str(ROOT / ".venv" / "bin" / "svc"), "admin", "credit", org, "+$100000", "--reason", "bench"],
                   env=env, check=True, stdout=subprocess.DEVNULL)


# --- the measurements ---

async def latencies(call: Any, calls: int) -> list[float]:
    """Seconds each of `calls` calls took, one at a time (after five unmeasured ones)."""
    for _ in range(5):
        await call()
    taken = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await call()
        taken.append(time.perf_counter() - t0)
    return taken


async def first_event(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
    async with client.stream("POST", url, json=BODY | {"stream": True}, headers=headers) as answer:
        if answer.status_code != 200:
            sys.exit(f"a streamed call failed: {answer.status_code} {(await answer.aread())[:200]!r}")
        async for line in answer.aiter_lines():
            if line.startswith("data: "):
                return


def ok(answer: httpx.Response) -> None:
    if answer.status_code != 200:
        sys.exit(f"a call failed: {answer.status_code} {answer.text[:300]}")


async def http_path(base: str, upstream: str, args: argparse.Namespace) -> dict[str, list[float]]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        token = (await http.post("/v1/auth/dev/login", json={"subject": "bench"})).json()["token"]
        auth = {"authorization": f"Bearer {token}"}
        made = (await http.post("/v1/orgs/bench/projects", json={"name": "bot"}, headers=auth)).json()
        r = await http.post("/v1/orgs/bench/projects/bot/deployments", content=bundle(None, {"ai": True}),
                            headers={**auth, "content-type": "application/gzip"})
        if r.status_code != 201:
            sys.exit(f"deploy failed: {r.text}")
        ok(await http.post("/v1/orgs/bench/projects/bot/ai", headers=auth))
        credit(Path(args.http_data), "bench")
        gateway = f"/v1/runtime/projects/{made['id']}/ai/chat/completions"
        runtime = {"X-Svc-Runtime-Token": TOKEN}
        async with httpx.AsyncClient(timeout=60) as direct:
            upstream_auth = {"authorization": f"Bearer {KEY}"}
            runs: dict[str, list[float]] = {"svc": [], "direct": [], "svc_ttft": [], "direct_ttft": [], "echo": []}
            for _ in range(args.rounds):
                runs["echo"] += await latencies(lambda: http.post("/bench/echo", json=BODY), args.calls)
                runs["direct"] += await latencies(lambda: direct.post(f"{upstream}/chat/completions", json=BODY,
                                                                      headers=upstream_auth), args.calls)
                runs["svc"] += await latencies(lambda: http.post(gateway, json=BODY, headers=runtime), args.calls)
                runs["direct_ttft"] += await latencies(
                    lambda: first_event(direct, f"{upstream}/chat/completions", upstream_auth), args.calls // 2)
                runs["svc_ttft"] += await latencies(lambda: first_event(http, gateway, runtime), args.calls // 2)
            ok(await http.post(gateway, json=BODY, headers=runtime))
    return runs


async def env_ai_path(server: Server, upstream: str, args: argparse.Namespace) -> dict[str, list[float]]:
    client = await ApiClient.login(server, "bench", fresh=False)
    host = await client.create("chat")
    manifest = json.loads((ROOT / "examples" / "chat" / "svc.json").read_text())
    await client.deploy("chat", bundle(ROOT / "examples" / "chat", manifest))
    ok(await client.http.post(f"/v1/orgs/{client.org}/projects/chat/ai"))
    credit(server.data_dir, client.org)
    message = {"message": BODY["messages"][0]["content"]}  # type: ignore[index]

    async def through_env_ai() -> None:
        ok(await client.edge.post("/api/chat", json=message, headers={"host": host}))

    async def worker_alone() -> None:  # the same request through the edge to the worker, no env.ai call
        answer = await client.edge.post("/api/floor", json=message, headers={"host": host})
        if answer.status_code != 404:
            sys.exit(f"the worker's floor answered {answer.status_code}")

    async with httpx.AsyncClient(timeout=60) as direct:
        upstream_auth = {"authorization": f"Bearer {KEY}"}
        worker_body = {"model": "openai/gpt-4o-mini", "max_tokens": 300,
                       "messages": [{"role": "system", "content": "You answer in one short paragraph."},
                                    {"role": "user", "content": message["message"]}]}
        runs: dict[str, list[float]] = {"svc": [], "direct": [], "floor": []}
        for _ in range(args.rounds):
            runs["direct"] += await latencies(lambda: direct.post(f"{upstream}/chat/completions", json=worker_body,
                                                                  headers=upstream_auth), args.calls)
            runs["svc"] += await latencies(through_env_ai, args.calls)
            runs["floor"] += await latencies(worker_alone, args.calls)
    await client.http.aclose()
    await client.edge.aclose()
    return runs


def added(runs: dict[str, list[float]], svc: str, direct: str, floor: str | None = None) -> float:
    """What svc adds at p50 (ms): its path less the upstream called directly (and less the edge and
    worker's own floor, for env.ai: the worker runtime's hops, measured the same way)."""
    extra = pct(runs[floor], 0.5) if floor else 0.0
    return (pct(runs[svc], 0.5) - pct(runs[direct], 0.5) - extra) * 1000


def ratio(runs: dict[str, list[float]], svc: str, direct: str) -> float:
    return pct(runs[svc], 0.99) / pct(runs[direct], 0.99)


def line(name: str, runs: dict[str, list[float]], svc: str, direct: str) -> None:
    print(f"    {name:<28} svc p50 {pct(runs[svc], 0.5) * 1000:7.2f} ms p99 {pct(runs[svc], 0.99) * 1000:7.2f} ms   "
          f"upstream direct p50 {pct(runs[direct], 0.5) * 1000:7.2f} ms p99 {pct(runs[direct], 0.99) * 1000:7.2f} ms")


def one_pass(args: argparse.Namespace, delay_ms: float) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """The upstream answering after `delay_ms`, both paths measured: (HTTP runs, env.ai runs)."""
    work = Path(tempfile.mkdtemp(prefix="svc-bench-ai-"))
    procs: list[subprocess.Popen[bytes]] = []
    server: Server | None = None
    try:
        up, upstream_base = start(["--serve-upstream", str(work / "up.port"), "--upstream-ms", str(delay_ms)],
                                  work / "up.port", LOAD_CORE)
        procs.append(up)
        upstream = upstream_base + "/v1"
        args.http_data = str(work / "http")
        svc, base = start(["--serve-svc", str(work / "svc.port"), "--http-data", args.http_data, "--upstream",
                           upstream], work / "svc.port", SVC_CORE)
        procs.append(svc)
        http_runs = asyncio.run(http_path(base, upstream, args))
        server = Server(checkout=ROOT, data_dir=work / "serve",
                        settings={"SVC_AI_FRONTIER_URL": upstream, "SVC_AI_FRONTIER_KEY": KEY,
                                  "SVC_AI_VALUE_URL": upstream, "SVC_AI_VALUE_KEY": KEY,
                                  "SVC_WORKER_PROCESSES": "1", "SVC_PROJECT_DB_ENABLED": "false",
                                  "SVC_FREE_AI_CALLS_PER_MINUTE": str(CALLS_PER_MINUTE)})
        server.data_dir.mkdir(parents=True)
        server.start()
        assert server.proc is not None
        pin(server.proc.pid, SVC_CORE)
        env_runs = asyncio.run(env_ai_path(server, upstream, args))
    finally:
        if server is not None:
            server.stop()
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
    return http_runs, env_runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--upstream-ms", type=float, default=100.0)
    ap.add_argument("--serve-upstream", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--serve-svc", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--http-data", help=argparse.SUPPRESS)
    ap.add_argument("--upstream", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream, args.upstream_ms)
        return
    if args.serve_svc:
        serve_svc(args.serve_svc, Path(args.http_data), args.upstream)
        return

    if PINNED:
        os.sched_setaffinity(0, {LOAD_CORE})
    print(f"ai: the gateway against the upstream called directly; {machine()}; load average "
          f"{os.getloadavg()[0]:.2f}; {'svc on core 0, the load and the upstream on core 1' if PINNED else 'unpinned'}")
    hot_http, hot_env = one_pass(args, 0.0)
    slow_http, slow_env = one_pass(args, args.upstream_ms)
    for title, (http_runs, env_runs) in (("an upstream that answers at once (what svc adds)", (hot_http, hot_env)),
                                         (f"an upstream that answers after {args.upstream_ms:g} ms (the tail)",
                                          (slow_http, slow_env))):
        print(f"\n  {title}:")
        print(f"    svc's HTTP server alone (a route that sends the body back): p50 "
              f"{pct(http_runs['echo'], 0.5) * 1000:.2f} ms; edge and worker alone (no env.ai): p50 "
              f"{pct(env_runs['floor'], 0.5) * 1000:.2f} ms")
        line("HTTP, a call", http_runs, "svc", "direct")
        line("HTTP, first streamed event", http_runs, "svc_ttft", "direct_ttft")
        line("env.ai from a worker", env_runs, "svc", "direct")
    results = [("HTTP, a call", added(hot_http, "svc", "direct"), ratio(slow_http, "svc", "direct")),
               ("HTTP, first streamed event", added(hot_http, "svc_ttft", "direct_ttft"),
                ratio(slow_http, "svc_ttft", "direct_ttft")),
               ("env.ai (less the edge and worker)", added(hot_env, "svc", "direct", "floor"),
                ratio(slow_env, "svc", "direct"))]
    print(f"\n  goals: <= {GOAL_P50_MS:g} ms added at p50 (instant upstream), <= {GOAL_P99:g}x at p99 (the "
          f"{args.upstream_ms:g} ms upstream)")
    for name, ms, times in results:
        met = ms <= GOAL_P50_MS and times <= GOAL_P99
        print(f"    {name:<34} added {ms:5.2f} ms, p99 {times:.2f}x: {'met' if met else 'MISSED'}")
    print(json.dumps({"added_ms": {n: round(ms, 2) for n, ms, _ in results},
                      "p99_ratio": {n: round(t, 3) for n, _, t in results}}))


if __name__ == "__main__":
    main()
