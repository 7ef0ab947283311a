"""A worker's env.ASSETS reads its own deployment's assets/ and nothing else (issue 42, item 3),
through a real `svc serve`: its worker runtime (workerd) and its edge (nginx). Project B has a
secret file; project A's worker asks env.ASSETS for it with every escape of the path we know
(encoded dot segments and slashes, backslashes, NUL): each fails, while A's own files still answer
as before. The edge's files server is tried on its own too: it serves the digest the runtime names
in X-Svc-Assets, never one taken from the path."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest

from svc.adapters.workers.workerd import find_workerd
from svc.edge.config import ASSETS_HOST
from tests.support.bundles import site
from tests.support.serve import Server, svc_serve
from tests.workers.test_serve import Project, _project, worker_bundle

pytestmark = pytest.mark.skipif(find_workerd() is None, reason="workerd is not installed (make setup)")

SECRET = b"project B's secret\n"

# Asks env.ASSETS for each path of the request's JSON body, as given (no URL object of the
# worker's own resolves them first), and says what came back.
PROBE_WORKER = """
export default {
  async fetch(request, env) {
    const { paths, headers } = await request.json();
    const answers = [];
    for (const path of paths) {
      try {
        const file = await env.ASSETS.fetch("http://assets.invalid" + path, { headers: headers ?? {} });
        answers.push({ status: file.status, type: file.headers.get("content-type"), etag: file.headers.get("etag"),
                       body: await file.text() });
      } catch (error) {
        answers.push({ status: 0, type: null, etag: null, body: `threw: ${error}` });
      }
    }
    return Response.json(answers);
  },
};
"""

OWN = {"index.html": b"<h1>A's home</h1>", "own.txt": b"A's own file\n", "data.json": b'{"mine": true}',
       "docs/index.html": b"<h1>A's docs</h1>", "with space.txt": b"spaced\n"}


def escapes(digest: str) -> list[str]:
    """Paths that leave A's assets/ for B's if any layer decodes them after the check: svc's
    dispatcher refuses each before the edge sees it."""
    target = f"{digest}/assets/secret.txt"
    return [
        f"/..%2F..%2F{target}",
        f"/..%2f..%2f{target}",
        f"/%2e%2e%2f%2e%2e%2f{target}",
        f"/%2E%2E%2F%2E%2E%2F{target}",
        f"/x/..%2F..%2F..%2F{target}",
        f"//..%2F..%2F{target}",
        f"/..%5C..%5C{target}",
        f"/..%5c..%5c{target}",
        f"/%2e%2e%5c%2e%2e%5c{target}",
        f"/ok%5C..%5C..%5C..%5C{target}",
        f"/..%2F..%2F{target}%00",
        f"/..%00/..%2F..%2F{target}",
        f"/\u0000/..%2F..%2F{target}",
        "/own.txt%00.html",
        f"/%FF..%2F..%2F{target}",
        "/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
        "/..%2Fsvc.json",
    ]


def within(digest: str) -> list[str]:
    """Paths that look like escapes but name a file under A's own assets/ (the URL parser resolves
    plain and %2e dot segments and backslashes first; %25 is a literal %): the edge's 404."""
    target = f"{digest}/assets/secret.txt"
    return [f"/../../{target}", f"/%2e%2e/%2e%2e/{target}", f"/..\\..\\{target}", f"/{target}",
            f"/..%252F..%252F{target}"]


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path_factory.mktemp("assets"), SVC_WORKER_PROCESSES="1") as running:
        yield running


@pytest.fixture(scope="module")
async def b_digest(server: Server) -> AsyncIterator[str]:
    """Project B's live deployment (a static site with a secret file): its digest's hex."""
    async for b in _project(server, "assets-b"):
        r = await b.deploy(site({"assets/index.html": b"<h1>B</h1>", "assets/secret.txt": SECRET}))
        assert r.status_code == 201, r.text
        digest: str = r.json()["digest"]
        assert digest.startswith("sha256:")
        yield digest.removeprefix("sha256:")


@pytest.fixture(scope="module")
async def a(server: Server) -> AsyncIterator[Project]:
    """Project A: a worker that probes env.ASSETS (worker-first, so every request reaches it)."""
    async for p in _project(server, "assets-a"):
        r = await p.deploy(worker_bundle("a", source=PROBE_WORKER, manifest={"assets": "worker-first"}, assets=OWN))
        assert r.status_code == 201, r.text
        yield p


async def probe(project: Project, paths: list[str], headers: dict[str, str] | None = None) -> list[dict[str, object]]:
    async with httpx.AsyncClient(timeout=60) as client:
        r = await client.post(f"http://127.0.0.1:{project.server.edge_port}/probe",
                              json={"paths": paths, "headers": headers or {}}, headers={"host": project.host})
    assert r.status_code == 200, r.text
    answers: list[dict[str, object]] = r.json()
    return answers


async def test_a_worker_cannot_read_another_deployments_files_through_env_assets(a: Project, b_digest: str) -> None:
    refused, inside = escapes(b_digest), within(b_digest)
    answers = await probe(a, refused + inside)
    for path, answer in zip(refused + inside, answers, strict=True):
        assert SECRET.decode() not in str(answer["body"]), (path, answer)
        assert answer["status"] == 404, (path, answer)
    # Refused on svc's side, before the edge: the dispatcher's words, not nginx's page.
    for path, answer in zip(refused, answers[:len(refused)], strict=True):
        assert answer["body"] == "not found", (path, answer)
    for path, answer in zip(inside, answers[len(refused):], strict=True):
        assert answer["body"] != "not found", (path, answer)  # the edge's 404: no such file of A's
    # B's file is there, where an escape would find it.
    assert a.server.data_dir is not None
    assert (a.server.data_dir / "sites" / b_digest / "assets" / "secret.txt").read_bytes() == SECRET


async def test_the_workers_own_files_answer_as_before(a: Project) -> None:
    paths = ["/own.txt", "/", "/index.html", "/data.json", "/docs/", "/docs/index.html", "/with%20space.txt",
             "/missing.txt", "/docs", "/x/../own.txt", "/%6Fwn.txt"]
    answers = {path: answer for path, answer in zip(paths, await probe(a, paths), strict=True)}
    assert answers["/own.txt"]["status"] == 200 and answers["/own.txt"]["body"] == "A's own file\n"
    assert str(answers["/own.txt"]["type"]).startswith("text/plain")
    assert answers["/own.txt"]["etag"]
    for path in ("/", "/index.html"):
        assert answers[path]["status"] == 200 and answers[path]["body"] == "<h1>A's home</h1>", path
        assert str(answers[path]["type"]).startswith("text/html"), path
    assert answers["/data.json"]["status"] == 200 and str(answers["/data.json"]["type"]).startswith("application/json")
    for path in ("/docs/", "/docs/index.html"):
        assert answers[path]["status"] == 200 and answers[path]["body"] == "<h1>A's docs</h1>", path
    assert answers["/with%20space.txt"]["status"] == 200 and answers["/with%20space.txt"]["body"] == "spaced\n"
    assert answers["/missing.txt"]["status"] == 404
    assert answers["/docs"]["status"] == 404  # a directory is not a file (no redirect, as before)
    assert answers["/x/../own.txt"]["body"] == "A's own file\n"  # resolved within, by the URL parser
    assert answers["/%6Fwn.txt"]["body"] == "A's own file\n"  # an encoded letter is the letter
    # Ranges and validators pass through as before.
    ranged = (await probe(a, ["/own.txt"], {"range": "bytes=0-2"}))[0]
    assert ranged["status"] == 206 and ranged["body"] == "A's"
    etag = str(answers["/own.txt"]["etag"])
    cached = (await probe(a, ["/own.txt"], {"if-none-match": etag}))[0]
    assert cached["status"] == 304


def runtime_token(server: Server) -> str:
    """The token the edge's files server asks of the runtime, read from the edge's config on disk."""
    assert server.data_dir is not None
    config = (server.data_dir / "edge" / "nginx.conf").read_text()
    found = re.search(r"\$http_x_svc_runtime_token != (\S+?)\)", config)
    assert found, "no runtime token in the edge's config"
    return found.group(1).strip("\"'")


async def test_the_edge_files_server_serves_only_the_digest_the_runtime_names(a: Project, b_digest: str) -> None:
    """The edge's side alone, as the runtime reaches it (its token): the digest is the header's."""
    a_deployments = (await a.http.get(f"{a.base}/deployments", headers=a.auth)).json()["deployments"]
    a_digest = str(a_deployments[0]["digest"]).removeprefix("sha256:")
    token = runtime_token(a.server)
    base = {"host": ASSETS_HOST, "x-svc-runtime-token": token}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{a.server.edge_port}", timeout=30) as client:
        async def get(target: str, **headers: str) -> httpx.Response:
            # The target as written: httpx would resolve dot segments of a URL it is given.
            request = client.build_request("GET", "/", headers={**base, **headers})
            request.extensions["target"] = target.encode()
            return await client.send(request)

        own = await get("/assets/own.txt", **{"x-svc-assets": a_digest})
        assert own.status_code == 200 and own.content == OWN["own.txt"]
        for target in (f"/assets/..%2F..%2F{b_digest}/assets/secret.txt", f"/assets/../../{b_digest}/assets/secret.txt",
                       f"/{b_digest}/assets/secret.txt", f"/assets/%2e%2e/%2e%2e/{b_digest}/assets/secret.txt",
                       "/svc.json", "/assets/../svc.json"):
            r = await get(target, **{"x-svc-assets": a_digest})
            assert r.status_code in (400, 404) and SECRET not in r.content, (target, r.status_code, r.text)
        # The header is a digest, and nothing else.
        for named in ("", "../" + b_digest, b_digest + "/..", b_digest[:63], b_digest.upper(), f"{b_digest}/assets"):
            r = await get("/assets/secret.txt", **{"x-svc-assets": named})
            assert r.status_code == 404 and SECRET not in r.content, (named, r.status_code)
        r = await get("/assets/secret.txt")
        assert r.status_code == 404
        # Without the runtime's token, nothing.
        r = await get("/assets/own.txt", **{"x-svc-assets": a_digest, "x-svc-runtime-token": "wrong"})
        assert r.status_code == 403
