"""Workers end to end, as a user has them: a real `svc serve` with its edge (nginx) and its worker
runtime (workerd). A bundle's worker/ answers the project's requests at its default host, reads a
secret (a new value reaches it with no redeploy), reaches its files through env.ASSETS, goes
back with a rollback, and a worker that cannot run is refused before it goes live."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import tarfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.edge.config import EdgeLayout
from svc.edge.routes import RouteTable
from tests.cli.conftest import Cli
from tests.support import components
from tests.support.bundles import site
from tests.support.serve import Server, svc_serve
from tests.support.wait import WAIT_SECONDS, until

pytestmark = components.WORKERD

API_WORKER = """
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/api/hello") {
      return Response.json({ greeting: env.GREETING ?? null, versions: env.SVC_SECRET_VERSIONS, version: VERSION,
                             host: url.host, scheme: url.protocol, client: request.headers.get("cf-connecting-ip"),
                             requestId: request.headers.get("x-request-id"), bindings: Object.keys(env).sort(),
                             hop: [request.headers.get("x-svc-worker"), request.headers.get("x-svc-runtime-token")] });
    }
    if (url.pathname === "/api/throw") throw new RangeError("thrown on purpose");
    if (url.pathname === "/api/file") {
      const file = await env.ASSETS.fetch(new URL("/data.json", request.url));
      return new Response(file.body, { headers: { "content-type": file.headers.get("content-type") } });
    }
    return new Response("from the worker: " + url.pathname, { status: 404 });
  },
};
"""


def worker_bundle(version: str, *, source: str = API_WORKER, manifest: dict[str, object] | None = None,
                  assets: dict[str, bytes] | None = None) -> bytes:
    files = {"worker/index.js": f"const VERSION = {json.dumps(version)};\n{source}".encode()}
    files |= {f"assets/{name}": data for name, data in (assets if assets is not None else {
        "index.html": b"<h1>home</h1>", "data.json": b'{"from": "assets"}'}).items()}
    return site(files, svc_json=manifest or {})


@dataclass
class Project:
    server: Server
    http: httpx.AsyncClient
    owner: str
    auth: dict[str, str]
    host: str

    @property
    def base(self) -> str:
        return f"/v1/orgs/{self.owner}/projects/site"

    async def deploy(self, body: bytes) -> httpx.Response:
        return await self.http.post(f"{self.base}/deployments", content=body,
                                    headers={**self.auth, "content-type": "application/gzip"})

    async def get(self, path: str, **headers: str) -> httpx.Response:
        async with httpx.AsyncClient(timeout=30) as client:
            return await client.get(f"http://127.0.0.1:{self.server.edge_port}{path}",
                                    headers={"host": self.host, **headers})


def edge_upstream(project: Project) -> str | None:
    """Where the edge sends the project's worker requests now, read from its routing table on disk
    (svc's own reader): its steady socket (svc_steady:<slot>) or a loading process (svc_worker_<n>)."""
    assert project.server.data_dir is not None
    table = RouteTable(EdgeLayout(project.server.data_dir / "edge"))
    table.load()
    entry = table.entry(project.host)
    return entry.upstream if entry is not None else None


async def until_steady(project: Project, seconds: float = WAIT_SECONDS) -> str:
    """Until the project's live worker is served by its own socket (its shard has converged)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        upstream = edge_upstream(project)
        if upstream is not None and upstream.startswith("svc_steady:"):
            return upstream
        await asyncio.sleep(0.05)
    raise AssertionError(f"the worker was not served steadily within {seconds:g}s (edge: {edge_upstream(project)})")


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    # A worker may take 3 s to start its answer here (30 by default): the wall-time test waits that long.
    async with svc_serve(tmp_path_factory.mktemp("workers"), SVC_WORKER_PROCESSES="1",
                         SVC_WORKER_TIMEOUT_SECONDS="3") as running:
        yield running


async def _project(server: Server, owner: str) -> AsyncIterator[Project]:
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        r = await http.post("/v1/auth/dev/login", json={"subject": owner})
        auth = {"authorization": f"Bearer {r.json()['token']}"}
        r = await http.post(f"/v1/orgs/{owner}/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
        yield Project(server=server, http=http, owner=owner, auth=auth, host=r.json()["hostname"])


@pytest.fixture
async def project(server: Server, request: pytest.FixtureRequest) -> AsyncIterator[Project]:
    owner = "w" + request.node.name.removeprefix("test_")[:20].replace("_", "-").strip("-")
    async for p in _project(server, owner):
        yield p


async def test_a_worker_serves_the_project_with_its_secret_and_its_files(project: Project) -> None:
    r = await project.http.put(f"{project.base}/secrets/GREETING", json={"value": "hello"}, headers=project.auth)
    assert r.status_code in (200, 201), r.text
    r = await project.deploy(worker_bundle("v1"))
    assert r.status_code == 201, r.text
    hello = await project.get("/api/hello", **{"cf-connecting-ip": "6.6.6.6", "x-request-id": "forged"})
    assert hello.status_code == 200, hello.text
    body = hello.json()
    assert body["greeting"] == "hello" and body["version"] == "v1"
    assert body["versions"] == {"GREETING": 1}
    assert body["host"] == project.host and body["scheme"] == "http:"
    # The edge says who the client is and which request this is; what the client claimed is gone.
    assert body["client"] == "127.0.0.1"
    assert body["requestId"] != "forged" and hello.headers["x-request-id"] == body["requestId"]
    assert body["bindings"] == ["ASSETS", "GREETING", "SVC_SECRET_VERSIONS"]
    # Files first: a file of assets/ is served by the edge; env.ASSETS reads them too.
    home = await project.get("/")
    assert home.status_code == 200 and home.text == "<h1>home</h1>"
    data = await project.get("/api/file")
    assert data.json() == {"from": "assets"} and data.headers["content-type"].startswith("application/json")
    # What no file answers is the worker's, its own 404 included.
    missing = await project.get("/nothing/here")
    assert missing.status_code == 404 and missing.text == "from the worker: /nothing/here"
    # /__svc/ stays svc's.
    reserved = await project.get("/__svc/nothing")
    assert "from the worker" not in reserved.text


async def test_a_secret_change_reaches_the_worker_without_a_redeploy(project: Project) -> None:
    await project.http.put(f"{project.base}/secrets/GREETING", json={"value": "one"}, headers=project.auth)
    assert (await project.deploy(worker_bundle("v1"))).status_code == 201
    assert (await project.get("/api/hello")).json()["greeting"] == "one"
    r = await project.http.put(f"{project.base}/secrets/GREETING", json={"value": "two"}, headers=project.auth)
    assert r.status_code in (200, 201), r.text
    # A 2xx means live: the very next request sees the new value and the secret's new version.
    body = (await project.get("/api/hello")).json()
    assert body["greeting"] == "two" and body["versions"] == {"GREETING": 2} and body["version"] == "v1"
    r = await project.http.delete(f"{project.base}/secrets/GREETING", headers=project.auth)
    assert r.status_code == 204, r.text
    body = (await project.get("/api/hello")).json()
    assert body["greeting"] is None and "GREETING" not in body["bindings"]


async def test_a_new_version_and_a_rollback_switch_the_code(project: Project) -> None:
    assert (await project.deploy(worker_bundle("v1"))).status_code == 201
    assert (await project.get("/api/hello")).json()["version"] == "v1"
    assert (await project.deploy(worker_bundle("v2"))).status_code == 201
    assert (await project.get("/api/hello")).json()["version"] == "v2"
    r = await project.http.post(f"{project.base}/rollback", json={"version": 1}, headers=project.auth)
    assert r.status_code == 200, r.text
    assert (await project.get("/api/hello")).json()["version"] == "v1"
    # A static version after a worker: no worker answers any more.
    static = worker_bundle("v3")
    body = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(static), mode="r:gz") as src, tarfile.open(fileobj=body, mode="w:gz") as dst:
        for member in src.getmembers():
            if not member.name.startswith("worker/"):
                dst.addfile(member, src.extractfile(member))
    assert (await project.deploy(body.getvalue())).status_code == 201
    assert (await project.get("/api/hello")).status_code == 404
    assert (await project.get("/")).text == "<h1>home</h1>"
    # Serving writes nothing to nginx's error log (a warning per request once did: $svc_worker
    # unset for a host without a worker, read by the edge's check for one).
    errors = (project.server.log.parent / "data" / "edge" / "error.log").read_text()
    assert "uninitialized" not in errors, errors[-500:]


async def test_a_live_worker_is_served_on_its_own_socket_once_its_shard_has_converged(project: Project) -> None:
    r = await project.http.put(f"{project.base}/secrets/GREETING", json={"value": "first-Xq7"}, headers=project.auth)
    assert r.status_code in (200, 201), r.text
    assert (await project.deploy(worker_bundle("v1"))).status_code == 201
    slot = await until_steady(project)
    # The steady process's configuration holds the secrets: it is not left on disk.
    assert project.server.data_dir is not None
    for path in (project.server.data_dir / "workers").rglob("*"):
        assert not path.is_file() or b"first-Xq7" not in path.read_bytes() or path.suffix == ".log", path
    hello = await project.get("/api/hello", **{"x-svc-worker": "forged", "x-svc-runtime-token": "forged"})
    body = hello.json()
    assert body["version"] == "v1" and body["greeting"] == "first-Xq7" and body["versions"] == {"GREETING": 1}
    # Nothing of svc's reaches the project's code: not its runtime headers, not its log binding.
    assert body["hop"] == [None, None]
    assert body["bindings"] == ["ASSETS", "GREETING", "SVC_SECRET_VERSIONS"]
    assert body["requestId"] == hello.headers["x-request-id"] and body["client"] == "127.0.0.1"
    assert (await project.get("/api/file")).json() == {"from": "assets"}
    # A secret set: the very next request has it (the loading process), and so does the new steady
    # process the shard converges to, on the same socket slot.
    r = await project.http.put(f"{project.base}/secrets/GREETING", json={"value": "two"}, headers=project.auth)
    assert r.status_code in (200, 201), r.text
    assert (await project.get("/api/hello")).json()["greeting"] == "two"
    assert await until_steady(project) == slot
    body = (await project.get("/api/hello")).json()
    assert body["greeting"] == "two" and body["versions"] == {"GREETING": 2}
    # A worker's exception on this path too: the Error envelope, and the stack in the project's logs.
    thrown = await project.get("/api/throw", accept="application/json")
    assert thrown.status_code == 500 and thrown.json()["code"] == "worker_error"
    request_id = thrown.headers["x-request-id"]

    async def thrown_logged() -> bool:  # sent once the request has ended
        lines = (await project.http.get(f"{project.base}/logs", headers=project.auth)).json()["lines"]
        return any(line["requestId"] == request_id and "thrown on purpose" in line["message"] for line in lines)

    await until(thrown_logged, what="the exception in the logs")


async def test_projects_on_steady_sockets_each_answer_with_their_own_worker(server: Server) -> None:
    """The edge's one steady upstream connects each request to its own project's socket."""
    async with contextlib.AsyncExitStack() as stack:
        projects = [await stack.enter_async_context(contextlib.asynccontextmanager(_project)(server, f"steady{n}"))
                    for n in range(3)]
        for n, project in enumerate(projects):
            assert (await project.deploy(worker_bundle(f"mine-{n}"))).status_code == 201
        slots = {await until_steady(project) for project in projects}
        assert len(slots) == 3, slots
        for _ in range(3):
            for n, project in enumerate(projects):
                assert (await project.get("/api/hello")).json()["version"] == f"mine-{n}"


async def test_worker_first_sends_every_request_to_the_worker(project: Project) -> None:
    source = ("export default { async fetch(request, env) { const url = new URL(request.url); "
              "if (url.pathname === '/') { const page = await env.ASSETS.fetch(new URL('/index.html', request.url)); "
              "return new Response('worker says: ' + await page.text()) } "
              "return new Response('worker: ' + url.pathname) } };")
    r = await project.deploy(worker_bundle("v1", source=source, manifest={"assets": "worker-first"}))
    assert r.status_code == 201, r.text
    assert (await project.get("/")).text == "worker says: <h1>home</h1>"
    assert (await project.get("/index.html")).text == "worker: /index.html"


async def test_a_worker_that_cannot_run_is_refused_and_the_live_one_keeps_serving(project: Project) -> None:
    assert (await project.deploy(worker_bundle("v1"))).status_code == 201
    refusals = {
        "export default { fetch() { return new Response('x') }": "SyntaxError",
        "export const handler = {};": "no default export",
        "import x from './missing.js'; export default { fetch() { return new Response(x) } };": "missing.js",
    }
    for source, words in refusals.items():
        r = await project.deploy(worker_bundle("bad", source=source))
        assert r.status_code == 400, r.text
        assert r.json()["code"] == "bad_worker" and words in r.json()["message"], r.text
    r = await project.deploy(worker_bundle("bad", manifest={"compatibilityDate": "2999-01-01"}))
    assert r.status_code == 400 and r.json()["code"] == "bad_worker", r.text
    r = await project.deploy(worker_bundle("bad", manifest={"compatibilityDate": "soon"}))
    assert r.status_code == 400 and r.json()["details"]["reason"] == "bad_manifest", r.text
    r = await project.deploy(worker_bundle("bad", manifest={"main": "app.js"}))
    assert r.status_code == 400 and r.json()["details"]["reason"] == "bad_manifest", r.text
    # Nothing of the refused ones went live, and no version was used up.
    assert (await project.get("/api/hello")).json()["version"] == "v1"
    versions = (await project.http.get(f"{project.base}/deployments", headers=project.auth)).json()["deployments"]
    assert [d["version"] for d in versions] == [1]


async def test_a_protected_projects_worker_runs_only_after_the_access_check(project: Project) -> None:
    assert (await project.deploy(worker_bundle("v1"))).status_code == 201
    r = await project.http.put(f"{project.base}/access", json={"mode": "password", "password": "correct horse 1"},
                               headers=project.auth)
    assert r.status_code == 200, r.text
    for path in ("/api/hello", "/", "/nothing"):
        refused = await project.get(path)
        # To the password page, and nothing of the worker.
        assert refused.status_code == 302, (path, refused.text)
        assert "/__svc/password?next=" in refused.headers["location"], refused.headers
        assert "from the worker" not in refused.text and "greeting" not in refused.text
    # Past the check (here with the project's bypass secret) the worker answers, files first.
    r = await project.http.post(f"{project.base}/access/bypass", headers=project.auth)
    assert r.status_code == 200, r.text
    bypass = {"svc-access-bypass": r.json()["secret"]}
    assert (await project.get("/api/hello", **bypass)).json()["version"] == "v1"
    assert (await project.get("/", **bypass)).text == "<h1>home</h1>"
    assert (await project.get("/nothing", **bypass)).text == "from the worker: /nothing"


async def test_what_a_worker_prints_and_throws_is_in_the_projects_logs(project: Project, tmp_path: Path) -> None:
    source = ("export default { async fetch(request) { const url = new URL(request.url); "
              "console.log('serving', url.pathname, { n: 1 }); "
              "if (url.pathname === '/boom') { console.warn('about to throw'); throw new TypeError('it broke') } "
              "return new Response('ok') } };")
    assert (await project.deploy(worker_bundle("v1", source=source))).status_code == 201
    assert (await project.get("/hello")).text == "ok"
    thrown = await project.get("/boom", accept="application/json")
    request_id = thrown.headers["x-request-id"]
    # API clients get the Error envelope, browsers a page; neither shows the exception (it is in the logs).
    assert thrown.status_code == 500
    assert thrown.json() == {"code": "worker_error", "message": "The site's worker failed on this request",
                             "details": {"requestId": request_id}}
    page = await project.get("/boom", accept="text/html,application/xhtml+xml")
    assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
    assert page.headers["x-request-id"] in page.text and "it broke" not in page.text

    async def logged() -> list[dict[str, object]]:
        r = await project.http.get(f"{project.base}/logs", headers=project.auth)
        assert r.status_code == 200, r.text
        return list(r.json()["lines"])

    async def all_logged() -> list[dict[str, object]] | None:
        lines = await logged()  # the runtime sends them once each request has ended; the edge's in batches
        return lines if len([line for line in lines if line["source"] == "edge"]) >= 3 and \
            len([line for line in lines if line["level"] == "error"]) >= 2 else None

    lines: list[dict[str, object]] = await until(all_logged, what="the edge's and the worker's lines")
    seen = [(line["source"], line["level"], line["message"]) for line in lines]
    assert ("worker", "log", 'serving /hello {"n":1}') in seen
    assert ("worker", "warn", "about to throw") in seen
    assert ("worker", "error", "TypeError: it broke") in seen
    error = next(line for line in lines if line["level"] == "error" and line["requestId"] == request_id)
    assert "index.js" in str(error["stack"])

    # The same through the CLI, and only what came after a cursor.
    cli = Cli(project.server.api, tmp_path / "home")
    cli.ok("login", "--dev", project.owner)
    shown = cli.ok("logs", "--org", project.owner, "--project", "site", "--json").json()
    assert [line["message"] for line in shown["lines"]] == [line["message"] for line in lines]
    text = cli.ok("logs", "--org", project.owner, "--project", "site", "--since", "10m").out
    assert "TypeError: it broke" in text and "serving /hello" in text
    # Each line shows the part of its request's id that tells requests apart: the edge's ids begin
    # with a prefix made per edge start, the same for every request (it was all that was shown).
    hello_id = next(str(line["requestId"]) for line in lines if str(line["message"]).startswith("serving /hello"))
    start, _, hello_short = hello_id.partition("-")
    assert request_id.startswith(start + "-")
    boom_short = request_id.removeprefix(start + "-")
    assert hello_short != boom_short
    pairs = {(line.split("[", 1)[1].split("]")[0], line.split("] ", 1)[1])
             for line in text.splitlines() if "] " in line}
    assert (hello_short, 'serving /hello {"n":1}') in pairs and (boom_short, "TypeError: it broke") in pairs, text
    assert any(said.startswith("GET /hello 200 ") and short == hello_short for short, said in pairs), text
    # --request with the id as shown: that request's lines only, the edge's and the worker's.
    one = cli.ok("logs", "--org", project.owner, "--project", "site", "--request", boom_short).out
    assert "GET /boom 500 " in one and "about to throw" in one and "TypeError: it broke" in one, one
    assert "/hello" not in one and hello_short not in one, one
    whole = cli.ok("logs", "--org", project.owner, "--project", "site", "--request", request_id, "--json").json()
    assert {line["requestId"] for line in whole["lines"]} == {request_id}
    assert {line["source"] for line in whole["lines"]} == {"edge", "worker"}
    r = await project.http.get(f"{project.base}/logs", params={"cursor": shown["nextCursor"]}, headers=project.auth)
    assert r.json()["lines"] == [] and r.json()["nextCursor"] == shown["nextCursor"]
    r = await project.http.get(f"{project.base}/logs", params={"since": "yesterday"}, headers=project.auth)
    assert r.status_code == 400, r.text


SWAP_WORKER = """
export default {
  async fetch(request, env) {
    const file = await env.ASSETS.fetch(new URL("/version.txt", request.url));
    return Response.json({ code: VERSION, assets: (await file.text()).trim(), secret: env.MARK ?? null });
  },
};
"""


async def test_twenty_swaps_under_load_fail_no_request_and_never_mix_versions(project: Project) -> None:
    def version(n: int) -> bytes:
        return worker_bundle(f"v{n}", source=SWAP_WORKER, manifest={"assets": "worker-first"},
                             assets={"version.txt": f"v{n}\n".encode()})

    first = await project.deploy(version(0))
    assert first.status_code == 201
    deployed = [first.json()["version"]]
    answers: list[tuple[int, dict[str, object] | str]] = []
    stop = asyncio.Event()

    async def hammer() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            while not stop.is_set():
                r = await client.get(f"http://127.0.0.1:{project.server.edge_port}/",
                                     headers={"host": project.host})
                answers.append((r.status_code, r.json() if r.status_code == 200 else r.text))

    hammers = [asyncio.create_task(hammer()) for _ in range(4)]
    try:
        for n in range(1, 21):
            if n % 4 == 0:  # a secret change: new env, same code
                r = await project.http.put(f"{project.base}/secrets/MARK", json={"value": f"m{n}"},
                                           headers=project.auth)
                assert r.status_code in (200, 201), r.text
            elif n % 4 == 2:  # a rollback to the version before
                r = await project.http.post(f"{project.base}/rollback", json={"version": deployed[-2]},
                                            headers=project.auth)
                assert r.status_code == 200, r.text
            else:
                r = await project.deploy(version(n))
                assert r.status_code == 201, r.text
                deployed.append(r.json()["version"])
            # Each change answered means live: the next request sees it.
            seen = (await project.get("/")).json()
            assert seen["code"] == seen["assets"]
            if n % 5 == 0:
                # The shard's steady process swapped too (a new one started, the old one drained).
                await until_steady(project)
    finally:
        stop.set()
        await asyncio.gather(*hammers)
    failed = [a for a in answers if a[0] != 200]
    assert not failed, failed[:5]
    mixed = [a for a in answers if isinstance(a[1], dict) and a[1]["code"] != a[1]["assets"]]
    assert not mixed, mixed[:5]
    assert len(answers) > 100 and len({a[1]["code"] for a in answers if isinstance(a[1], dict)}) > 5


async def test_the_worker_example_deploys_with_the_cli_and_answers(server: Server, tmp_path: Path) -> None:
    """README's walkthrough: `svc deploy examples/worker`, a secret, the API answering."""
    example = Path(__file__).resolve().parents[2] / "examples" / "worker"
    cli = Cli(server.api, tmp_path / "home")
    cli.ok("login", "--dev", "wexample")
    out = cli.ok("deploy", str(example)).out
    assert "With its worker (worker/index.js, compatibility date 2025-06-01): GET / answered 200" in out, out
    deployed = cli.ok("deploy", str(example), "--json").json()
    assert deployed["worker"] == {"main": "index.js", "compatibilityDate": "2025-06-01", "assets": "files-first"}
    assert deployed["firstRequest"]["status"] == 200
    cli.ok("secrets", "set", "GREETING", "--project", "hello-api", input="Bonjour")
    host = "hello-api-wexample.localhost"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.edge_port}", headers={"host": host},
                                 timeout=30) as site:
        greeting = (await site.get("/api/greeting", params={"name": "Ada"})).json()
        assert greeting == {"message": "Bonjour, Ada!", "secretVersion": 1}
        quote = (await site.get("/api/quotes", params={"id": 1})).json()
        assert quote == {"id": 1, "text": "Make it work, make it right, make it fast.", "by": "Kent Beck"}
        echo = (await site.post("/api/echo", json={"hi": [1, 2]})).json()
        assert echo == {"youSent": {"hi": [1, 2]}, "from": "127.0.0.1"}
        assert (await site.get("/api/nothing")).json()["code"] == "not_found"
        assert "<h1>hello-api</h1>" in (await site.get("/")).text
    shown = cli.ok("deployments", "--project", "hello-api", "--json").json()
    assert shown["deployments"][0]["worker"]["main"] == "index.js"


async def test_the_edge_counts_a_projects_traffic_and_logs_its_requests(project: Project) -> None:
    assert (await project.deploy(worker_bundle("v1"))).status_code == 201
    for _ in range(5):
        assert (await project.get("/")).status_code == 200
    for _ in range(3):
        assert (await project.get("/nothing/here")).status_code == 404
    assert (await project.get("/api/hello")).status_code == 200

    async def counted() -> dict[str, object]:
        r = await project.http.get(f"{project.base}/traffic", headers=project.auth)
        assert r.status_code == 200, r.text
        return dict(r.json())

    async def nine() -> dict[str, object] | None:  # nginx flushes its log every second; svc reads it every second
        found = await counted()
        return found if found["requests"] == 9 else None

    body: dict[str, object] = await until(nine, what="the 9 requests counted")
    buckets = body["buckets"]
    assert isinstance(buckets, list) and len(buckets) == 96 and body["minutesPerBucket"] == 15
    assert sum(b["s2xx"] for b in buckets) == 6 and sum(b["s4xx"] for b in buckets) == 3
    assert body["bytesSent"] > 0
    # The requests are in the project's logs too, with their request ids (the counts and the lines
    # reach svc each on its own way: nginx's memory and its log file, each every second).

    async def nine_lines() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        lines = (await project.http.get(f"{project.base}/logs", headers=project.auth)).json()["lines"]
        edge = [line for line in lines if line["source"] == "edge"]
        return (lines, edge) if len(edge) >= 9 else None

    lines, edge = await until(nine_lines, what="the 9 requests in the logs")
    assert len(edge) == 9 and {line["level"] for line in edge} == {"2xx", "4xx"}, [line["message"] for line in lines]
    assert any(line["message"].startswith("GET /nothing/here 404 ") for line in edge)
    assert all(line["requestId"] for line in edge)
    r = await project.http.get(f"{project.base}/traffic", params={"hours": 0}, headers=project.auth)
    assert r.status_code == 400


async def test_a_hostile_worker_reaches_nothing_of_svc_or_of_other_projects(project: Project) -> None:
    api_port = int(project.server.api.rsplit(":", 1)[1])
    targets = [f"http://127.0.0.1:{api_port}/v1/config", f"http://127.0.0.1:{project.server.edge_port}/",
               f"http://localhost:{project.server.edge_port}/", f"http://{project.host}:{project.server.edge_port}/",
               "http://127.0.0.1:5432/", f"http://[::1]:{api_port}/", "http://169.254.169.254/latest/meta-data/",
               "http://10.0.0.1/", "http://192.168.0.1/"]
    source = ("export default { async fetch(request, env) { const reached = {}; "
              f"for (const url of {json.dumps(targets)}) {{ try {{ reached[url] = (await fetch(url)).status }} "
              "catch (error) { reached[url] = 'refused' } } "
              "return Response.json({ reached, env: Object.keys(env).sort(), "
              "globals: ['LOADER', 'SVC', 'SITES', 'TOKEN', 'INTERNET'].filter((name) => name in globalThis) }) } };")
    r = await project.http.put(f"{project.base}/secrets/MINE", json={"value": "mine"}, headers=project.auth)
    assert r.status_code in (200, 201), r.text
    assert (await project.deploy(worker_bundle("v1", source=source))).status_code == 201
    # The same on both paths: the loading process (at once), then its own steady socket.
    for path in ("loading", "steady"):
        if path == "steady":
            await until_steady(project)
        answer = await project.get("/api/probe")
        assert answer.status_code == 200, (path, answer.text)
        seen = answer.json()
        assert seen["reached"] == dict.fromkeys(targets, "refused"), path
        assert seen["env"] == ["ASSETS", "MINE", "SVC_SECRET_VERSIONS"] and seen["globals"] == [], path


async def test_a_worker_that_never_answers_is_cut_off_by_the_edge(project: Project) -> None:
    # (A promise nothing can resolve, workerd itself ends: the worker waits on a long timer.)
    source = ("export default { async fetch(request) { if (new URL(request.url).pathname === '/hang') "
              "await new Promise((resolve) => setTimeout(resolve, 60000)); return new Response('quick') } };")
    assert (await project.deploy(worker_bundle("v1", source=source))).status_code == 201
    hanging = asyncio.create_task(project.get("/hang", accept="application/json"))
    # Waiting costs no CPU: the other requests of the process are answered meanwhile.
    assert (await project.get("/other")).text == "quick"
    cut = await asyncio.wait_for(hanging, timeout=30)
    assert cut.status_code == 500 and cut.json()["code"] == "internal", cut.text
