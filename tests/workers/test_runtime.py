"""The worker runtime on a real workerd (adapters/workers): the check that refuses a worker before
it goes live, a project's worker loaded on its first request with its bindings, a new key running
new code beside the old, the network rules, and the watchdog replacing a process that a worker
stalls. svc's side of the runtime (GET /v1/runtime/workers/{key}) is played here by a small HTTP
server, so the adapter is tested alone; the area's tests run it behind a real svc."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pwd
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.adapters.workers.port import BadWorker, WorkerCode
from svc.adapters.workers.workerd import WorkerdOptions, WorkerdRuntime, find_workerd, runnable_by_others
from tests.support import components

pytestmark = components.WORKERD

ASSETS_DIGEST = "ab" * 32
HELLO = "export default { async fetch(request, env) { return Response.json({ hello: env.GREETING }) } }"


class FakeSvc:
    """svc's runtime endpoints: workers by key, and the log lines the runtime sends."""

    def __init__(self) -> None:
        self.workers: dict[str, dict[str, Any]] = {}
        self.logs: list[dict[str, Any]] = []
        # By the digest the runtime names (X-Svc-Assets) and the path, as the edge serves them.
        self.files = {(ASSETS_DIGEST, "/assets/hello.txt"): b"hello from assets\n"}
        self.token: str | None = None
        self.tokens_seen: set[str | None] = set()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.tokens_seen.add(self.headers.get("X-Svc-Runtime-Token"))
                if self.headers.get("Host") == "_svc-runtime-assets":  # the edge's files server
                    data = fake.files.get((self.headers.get("X-Svc-Assets"), self.path))
                    self.send_response(200 if data is not None else 404)
                    self.send_header("Content-Type", "text/plain; charset=utf-8")
                    self.send_header("Content-Length", str(len(data or b"")))
                    self.end_headers()
                    self.wfile.write(data or b"")
                    return
                key = self.path.removeprefix("/v1/runtime/workers/")
                if key in fake.workers:
                    self._answer(200, fake.workers[key])
                else:
                    self._answer(404, {"error": {"code": "not_found", "message": "no such worker"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fake.logs.extend(json.loads(self.rfile.read(length))["lines"])
                self._answer(204, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    def add(self, key: str, source: str, *, text: dict[str, str] | None = None, assets: str | None = None,
            project: str = "p1", extra: dict[str, str] | None = None) -> None:
        self.workers[key] = {"project": project, "mainModule": "index.js",
                             "modules": {"index.js": source, **(extra or {})},
                             "compatibilityDate": "2024-09-23", "env": text or {}, "assets": assets}


@pytest.fixture(scope="module")
def fake_svc() -> Iterator[FakeSvc]:
    fake = FakeSvc()
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    yield fake
    fake.server.shutdown()


@pytest.fixture
async def runtime(tmp_path: Path, fake_svc: FakeSvc) -> AsyncIterator[WorkerdRuntime]:
    binary = find_workerd()
    assert binary is not None
    rt = WorkerdRuntime(WorkerdOptions(binary=binary, root=tmp_path / "workers", api_address=fake_svc.address,
                                       assets_address=fake_svc.address, processes=1, check_seconds=3.0,
                                       stuck_seconds=2.0, probe_every=0.2,
                                       user="nobody" if os.geteuid() == 0 else None))
    await rt.start()
    try:
        yield rt
    finally:
        await rt.stop()


async def _get(rt: WorkerdRuntime, key: str, path: str = "/", **headers: str) -> httpx.Response:
    upstream = rt.upstreams()[0]
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        return await client.get(f"http://{upstream.host}:{upstream.port}{path}",
                                headers={"X-Svc-Worker": key, "X-Svc-Runtime-Token": rt.token, **headers})


async def test_a_worker_that_cannot_run_is_refused_in_the_runtimes_words(runtime: WorkerdRuntime) -> None:
    await runtime.check(WorkerCode("index.js", {"index.js": HELLO}, "2024-09-23"))
    cases = {
        "export default { fetch() { return new Response('x') }": "SyntaxError",
        "export const x = 1;": "'x'",
        "console.log('no exports')": "no default export",
        "export default {}": r"no fetch\(\) handler",
        "import helper from './helper.js'; export default { fetch() { return new Response(helper) } }":
            'No such module "helper.js"',
        "throw new Error('broken at the top')": "broken at the top",
    }
    for source, words in cases.items():
        with pytest.raises(BadWorker, match=words):
            await runtime.check(WorkerCode("index.js", {"index.js": source}, "2024-09-23"))
    with pytest.raises(BadWorker, match="newest date supported"):
        await runtime.check(WorkerCode("index.js", {"index.js": HELLO}, "2999-01-01"))
    # A module the main one imports is part of the worker.
    await runtime.check(WorkerCode("index.js", {
        "index.js": "import { word } from './lib/words.js'; export default { fetch() { return new Response(word) } }",
        "lib/words.js": "export const word = 'hi';"}, "2024-09-23"))


async def test_top_level_code_that_never_returns_is_refused_and_the_checker_replaced(
        runtime: WorkerdRuntime) -> None:
    with pytest.raises(BadWorker, match="did not finish loading"):
        await runtime.check(WorkerCode("index.js", {"index.js": "while (true) {}"}, "2024-09-23"))
    # The next check is answered by a fresh checker (the stuck one was killed and started again).
    for _ in range(100):
        try:
            await runtime.check(WorkerCode("index.js", {"index.js": HELLO}, "2024-09-23"))
            break
        except Exception:
            await asyncio.sleep(0.1)
    else:
        pytest.fail("the checker never came back")


async def test_a_worker_runs_with_its_bindings_and_a_new_key_runs_new_code(
        runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    fake_svc.add("d1.1", HELLO, text={"GREETING": "first"})
    fake_svc.add("d1.2", HELLO, text={"GREETING": "second"})
    fake_svc.add("d2.1", "export default { async fetch(request, env) { "
                         "const file = await env.ASSETS.fetch('http://assets/hello.txt'); "
                         "return Response.json({ asset: await file.text(), type: file.headers.get('content-type'), "
                         "host: new URL(request.url).host, has: Object.keys(env).sort() }) } }",
                  assets=f"{ASSETS_DIGEST}/assets")
    first = await _get(runtime, "d1.1")
    assert first.status_code == 200, first.text
    assert first.json() == {"hello": "first"}
    assert (await _get(runtime, "d1.2")).json() == {"hello": "second"}
    assert (await _get(runtime, "d1.1")).json() == {"hello": "first"}  # the old key still answers
    assets = (await _get(runtime, "d2.1", Host="www.example.test")).json()
    assert assets == {"asset": "hello from assets\n", "type": "text/plain; charset=utf-8",
                      "host": "www.example.test", "has": ["ASSETS"]}
    # Only what svc grants is in env: no loader, no svc, no token of the dispatcher's.
    assert fake_svc.tokens_seen == {runtime.token}


async def test_only_the_edge_may_call_and_an_unknown_worker_is_503(runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    upstream = runtime.upstreams()[0]
    async with httpx.AsyncClient(trust_env=False) as client:
        refused = await client.get(f"http://{upstream.host}:{upstream.port}/", headers={"X-Svc-Worker": "d1.1"})
    assert refused.status_code == 403
    missing = await _get(runtime, "nope.1")
    assert missing.status_code == 503, missing.text
    assert missing.json() == {"code": "worker_unavailable", "message": "The site's worker is not available; try again",
                              "details": None}
    # A failed load is not kept: once svc has the worker, the same key runs it.
    fake_svc.add("nope.1", HELLO, text={"GREETING": "late"})
    assert (await _get(runtime, "nope.1")).json() == {"hello": "late"}


async def test_a_worker_reaches_no_local_or_private_address(runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    upstream = runtime.upstreams()[0]
    targets = [f"http://127.0.0.1:{upstream.port}/", f"http://{fake_svc.address}/v1/runtime/workers/d1.1",
               "http://localhost/", "http://10.1.2.3/", "http://192.168.1.1/", "http://169.254.169.254/",
               f"http://[::1]:{upstream.port}/"]
    fake_svc.add("hostile.1", "export default { async fetch() { const out = {}; for (const url of "
                              + json.dumps(targets) + ") { try { out[url] = (await fetch(url)).status } "
                              "catch (error) { out[url] = 'refused' } } return Response.json(out) } }")
    reached = (await _get(runtime, "hostile.1")).json()
    assert reached == dict.fromkeys(targets, "refused")


async def test_no_spelling_of_a_local_or_private_address_gets_through(runtime: WorkerdRuntime,
                                                                      fake_svc: FakeSvc) -> None:
    """The spellings a hostile tenant tries after the plain ones (issue 42's probe): numbers in other
    bases, short forms, IPv4 inside IPv6, the unspecified address, names that end at loopback."""
    port = runtime.upstreams()[0].port
    targets = [f"http://2130706433:{port}/", f"http://0x7f000001:{port}/", f"http://0177.0.0.1:{port}/",
               f"http://127.1:{port}/", f"http://0.0.0.0:{port}/", f"http://[::ffff:127.0.0.1]:{port}/",
               f"http://[::ffff:7f00:1]:{port}/", f"http://[::]:{port}/", f"http://LOCALHOST.:{port}/",
               "http://2852039166/", "http://[::ffff:169.254.169.254]/", "http://100.64.0.1/",
               "http://172.16.0.1/", "http://[fd00::1]/", "http://[fe80::1]/"]
    fake_svc.add("spellings.1", "export default { async fetch() { const out = {}; for (const url of "
                                + json.dumps(targets) + ") { try { out[url] = (await fetch(url)).status } "
                                "catch (error) { out[url] = 'refused' } } return Response.json(out) } }")
    reached = (await _get(runtime, "spellings.1")).json()
    assert reached == dict.fromkeys(targets, "refused")



async def _answered_again(runtime: WorkerdRuntime, key: str) -> httpx.Response:
    """The first 200 from `key` once the killed process is back (within 30 s)."""
    for _ in range(300):
        try:
            answer = await _get(runtime, key)
            if answer.status_code == 200:
                return answer
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"{key} did not answer again within 30 s")

async def test_the_watchdog_replaces_a_process_a_worker_stalls(runtime: WorkerdRuntime, fake_svc: FakeSvc,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    # The CPU bound of docs/workers.md ("Limits": 5 s) is the runtime's default.
    assert WorkerdOptions.stuck_seconds == 5.0
    fake_svc.add("loop.1", "export default { fetch() { while (true) {} } }")
    fake_svc.add("ok.1", HELLO, text={"GREETING": "still here"})
    stalled = asyncio.create_task(_get(runtime, "loop.1"))
    # Within the watchdog's bound the process is killed (the stalled request fails) and started again.
    with caplog.at_level(logging.ERROR, logger="svc.workers"), pytest.raises(httpx.HTTPError):
        await asyncio.wait_for(stalled, timeout=60)
    # Killed for the bound (this runtime's: 2 s), counted from the first probe it left unanswered.
    kills = [r.getMessage() for r in caplog.records if "killing it" in r.getMessage()]
    assert kills and all("answered no health probe for 2s, the CPU bound" in kill for kill in kills), kills
    answer = await _answered_again(runtime, "ok.1")
    assert answer.json() == {"hello": "still here"}


async def test_console_lines_and_exceptions_reach_svc_as_the_projects_logs(
        runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    fake_svc.add("logs.1", "export default { fetch(request) { console.log('hello', { n: 1 }); "
                           "if (new URL(request.url).pathname === '/throw') throw new Error('boom'); "
                           "return new Response('ok') } }", project="p-logs")
    assert (await _get(runtime, "logs.1", "/", **{"X-Request-Id": "req-1"})).status_code == 200
    thrown = await _get(runtime, "logs.1", "/throw", **{"X-Request-Id": "req-2"})
    assert thrown.status_code == 500
    for _ in range(100):
        if len(fake_svc.logs) >= 3:
            break
        await asyncio.sleep(0.05)
    messages = [(line["level"], line["message"], line["requestId"]) for line in fake_svc.logs]
    assert ("log", 'hello {"n":1}', "req-1") in messages
    assert ("error", "Error: boom", "req-2") in messages


async def test_a_worker_entrypoint_class_is_served_and_what_it_prints_logged(
        runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    """A default export that is a WorkerEntrypoint class (the wrapper that records the console
    makes it, with its env: only the project's bindings), and lines printed after the answer
    (ctx.waitUntil) keep their request's id."""
    fake_svc.add("cls.1", 'import { WorkerEntrypoint } from "cloudflare:workers"; '
                          "export default class extends WorkerEntrypoint { fetch(request) { "
                          "console.info('bindings', Object.keys(this.env).join(',')); "
                          "this.ctx.waitUntil(Promise.resolve().then(() => console.error('later'))); "
                          "return new Response('class ' + this.env.GREETING) } }",
                  text={"GREETING": "hi"}, project="p-cls")
    answer = await _get(runtime, "cls.1", "/", **{"X-Request-Id": "req-c"})
    assert (answer.status_code, answer.text) == (200, "class hi")
    for _ in range(100):
        if sum(1 for line in fake_svc.logs if line.get("requestId") == "req-c") >= 2:
            break
        await asyncio.sleep(0.05)
    messages = [(line["level"], line["message"]) for line in fake_svc.logs if line.get("requestId") == "req-c"]
    assert ("info", "bindings GREETING") in messages
    assert ("error", "later") in messages


@pytest.mark.skipif(os.geteuid() != 0, reason="only svc running as root switches workerd's user")
async def test_workerd_runs_as_an_unprivileged_user(runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    nobody = pwd.getpwnam("nobody").pw_uid
    for process in (*runtime._serving, runtime._checker):
        pid = process.supervisor.pid
        assert pid is not None
        uids = next(line for line in open(f"/proc/{pid}/status").read().splitlines() if line.startswith("Uid:"))
        assert uids.split()[1:] == [str(nobody)] * 4, uids
    # and it still serves (its files are its own directory's; code and assets come over HTTP)
    fake_svc.add("user.1", HELLO, text={"GREETING": "from nobody"})
    assert (await _get(runtime, "user.1")).json() == {"hello": "from nobody"}


async def test_a_worker_past_its_memory_ends_its_process_which_comes_back(
        runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    fake_svc.add("hog.1", "export default { fetch() { const kept = []; "
                          "while (true) kept.push(new Array(1e6).fill(kept.length)); } }")
    fake_svc.add("after.1", HELLO, text={"GREETING": "after the hog"})
    pid = runtime._serving[0].supervisor.pid
    with pytest.raises(httpx.HTTPError):  # the process ends (V8's heap limit), the request with it
        await _get(runtime, "hog.1")
    answer = await _answered_again(runtime, "after.1")
    assert answer.json() == {"hello": "after the hog"}
    assert runtime._serving[0].supervisor.pid != pid


def test_a_binary_others_cannot_reach_runs_from_a_copy_they_can(tmp_path: Path) -> None:
    binary = find_workerd()
    assert binary is not None
    hidden = tmp_path / "private" / "bin"
    hidden.mkdir(parents=True)
    (tmp_path / "private").chmod(0o700)
    inside = hidden / "workerd"
    shutil.copyfile(binary, inside)
    inside.chmod(0o755)
    runnable = Path(runnable_by_others(str(inside)))
    assert runnable != inside and runnable.read_bytes()[:4] == b"\x7fELF"
    assert all(p.stat().st_mode & 0o001 for p in (runnable, *runnable.parents))
    assert runnable_by_others(str(inside)) == str(runnable)  # made once
    assert runnable_by_others(str(runnable)) == str(runnable)  # one others may run is used as it is


async def test_the_worker_sees_the_scheme_the_edge_says_the_client_used(
        runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    """TLS ends at the edge: X-Forwarded-Proto is the scheme of the URL the worker sees."""
    fake_svc.add("scheme.1", "export default { fetch(request) { return new Response(new URL(request.url).protocol) } }")
    assert (await _get(runtime, "scheme.1", "/", **{"X-Forwarded-Proto": "https"})).text == "https:"
    assert (await _get(runtime, "scheme.1", "/", **{"X-Forwarded-Proto": "http"})).text == "http:"
