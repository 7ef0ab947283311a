"""env.storage end to end on a real `svc serve` (edge, workerd, the object store): a granted
project's worker puts, gets (ranges too), heads, lists and deletes its objects with R2's API, the
bodies streamed; over the quota a put throws a StorageError; without a grant there is no binding
(and after a revoke, none at the next request); and a key, whatever it holds, never reaches
another project's objects."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from tests.email.test_worker import _runtime_config, project_id
from tests.support import components
from tests.support.bundles import site
from tests.support.serve import Server, svc_serve
from tests.workers.test_serve import Project, until_steady

pytestmark = components.WORKERD

# The free plan's quota here (a setting): small, so that a test can pass it; its half is more than
# the API's JSON cap (1 MiB), which a put's body is not held to.
QUOTA = 3_000_000

WORKER = b"""
const shape = (o) => o && { key: o.key, size: o.size, etag: o.etag, httpEtag: o.httpEtag,
                            uploaded: o.uploaded.toISOString(), contentType: o.httpMetadata.contentType ?? null,
                            range: o.range ?? null };

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const q = url.searchParams;
    const key = q.get("key");
    try {
      switch (url.pathname) {
        case "/env":
          return Response.json({ bindings: Object.keys(env).sort(), storage: typeof env.storage,
                                 get: env.storage ? typeof env.storage.get : null });
        case "/put":
          return Response.json(shape(await env.storage.put(key, request.body, {
            httpMetadata: { contentType: request.headers.get("content-type") } })));
        case "/put-stream": {  // a stream of the worker's own: no length known
          const stream = new ReadableStream({
            start(c) { c.enqueue(new TextEncoder().encode("one two")); c.close(); } });
          return Response.json(shape(await env.storage.put(key, stream)));
        }
        case "/put-text":
          return Response.json(shape(await env.storage.put(key, q.get("text"))));
        case "/get": {  // the object's body streamed back as the worker's answer
          const range = q.has("suffix") ? { suffix: Number(q.get("suffix")) }
            : q.has("offset") ? { offset: Number(q.get("offset")),
                                  length: q.has("length") ? Number(q.get("length")) : undefined }
            : undefined;
          const object = await env.storage.get(key, range ? { range } : undefined);
          if (object === null) return Response.json({ missing: key }, { status: 404 });
          const headers = new Headers({ "x-object": JSON.stringify(shape(object)), etag: object.httpEtag });
          object.writeHttpMetadata(headers);
          return new Response(object.body, { headers });
        }
        case "/text":
          return Response.json({ text: await (await env.storage.get(key)).text() });
        case "/head":
          return Response.json({ object: shape(await env.storage.head(key)) });
        case "/list": {
          const listed = await env.storage.list(JSON.parse(q.get("options") || "{}"));
          return Response.json({ ...listed, objects: listed.objects.map(shape) });
        }
        case "/delete":
          await env.storage.delete(JSON.parse(q.get("keys")));
          return Response.json({ deleted: true });
      }
      return new Response("no such path", { status: 404 });
    } catch (error) {
      return Response.json({ thrown: error.name, code: error.code, status: error.status, message: error.message,
                             isStorageError: env.storage ? error instanceof env.storage.StorageError : null },
                           { status: 418 });
    }
  },
};
"""


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path_factory.mktemp("storage-worker"), SVC_WORKER_PROCESSES="1",
                         SVC_FREE_STORAGE_BYTES=str(QUOTA)) as running:
        yield running


_owners = iter(range(1000))


@asynccontextmanager
async def deployed(server: Server) -> AsyncIterator[Project]:
    """A new owner's project "site", with the worker deployed."""
    owner = f"keeper{next(_owners)}"
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        r = await http.post("/v1/auth/dev/login", json={"subject": owner})
        auth = {"authorization": f"Bearer {r.json()['token']}"}
        r = await http.post(f"/v1/orgs/{owner}/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
        made = Project(server=server, http=http, owner=owner, auth=auth, host=r.json()["hostname"])
        r = await made.deploy(site({"worker/index.js": WORKER}, svc_json={}))
        assert r.status_code == 201, r.text
        yield made


@pytest.fixture
async def project(server: Server) -> AsyncIterator[Project]:
    async with deployed(server) as made:
        yield made


async def grant(project: Project) -> dict[str, Any]:
    r = await project.http.post(f"{project.base}/storage", headers=project.auth)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def call(project: Project, path: str, *, method: str = "GET", content: bytes | None = None,
               **params: str) -> httpx.Response:
    """A visitor's request to the worker, through the edge."""
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.request(method, f"http://127.0.0.1:{project.server.edge_port}{path}", params=params,
                                    content=content, headers={"host": project.host, "content-type": "text/csv"})


async def env_of(project: Project) -> dict[str, Any]:
    r = await call(project, "/env")
    assert r.status_code == 200, r.text
    return dict(r.json())


def thrown(r: httpx.Response) -> tuple[str, str, int]:
    assert r.status_code == 418, r.text
    body = r.json()
    assert body["isStorageError"] is True, body
    return body["thrown"], body["code"], body["status"]


async def test_env_storage_is_there_only_with_the_grant(project: Project) -> None:
    before = await env_of(project)
    assert before["storage"] == "undefined" and not any("STORAGE" in b for b in before["bindings"])
    await grant(project)
    granted = await env_of(project)
    assert granted["storage"] == "object" and granted["get"] == "function"
    assert "storage" in granted["bindings"] and "__SVC_STORAGE__" not in granted["bindings"]
    # The steady path (the shard's own process) has it as the loading path has it.
    await until_steady(project)
    assert (await env_of(project))["get"] == "function"
    assert (await call(project, "/put-text", key="kept.txt", text="still here")).status_code == 200
    assert (await project.http.delete(f"{project.base}/storage", headers=project.auth)).status_code == 204
    # Gone at the next request; the objects are kept (a revoke keeps them) and come back with the grant.
    assert (await env_of(project))["storage"] == "undefined"
    await grant(project)
    assert (await call(project, "/text", key="kept.txt")).json() == {"text": "still here"}


async def test_put_get_head_list_delete(project: Project) -> None:
    await grant(project)
    body = b"id,name\n" + b"".join(b"%d,row %d\n" % (i, i) for i in range(20_000))
    put = await call(project, "/put", method="PUT", content=body, key="data/rows.csv")
    assert put.status_code == 200, put.text
    made = put.json()
    assert made["key"] == "data/rows.csv" and made["size"] == len(body) and made["contentType"] == "text/csv"
    assert made["httpEtag"] == f'"{made["etag"]}"' and made["etag"] == hashlib.md5(body).hexdigest()

    whole = await call(project, "/get", key="data/rows.csv")
    assert whole.status_code == 200 and whole.content == body
    assert whole.headers["content-type"] == "text/csv"
    assert json.loads(whole.headers["x-object"]) == made

    # Ranges, as R2 takes them: { offset, length }, { offset }, { suffix }.
    part = await call(project, "/get", key="data/rows.csv", offset="8", length="10")
    assert part.content == body[8:18]
    assert json.loads(part.headers["x-object"])["range"] == {"offset": 8, "length": 10}
    assert (await call(project, "/get", key="data/rows.csv", offset=str(len(body) - 5))).content == body[-5:]
    assert (await call(project, "/get", key="data/rows.csv", suffix="7")).content == body[-7:]
    assert thrown(await call(project, "/get", key="data/rows.csv", offset=str(len(body) + 10), length="1"))[2] == 416

    # The worker's object is the project's, as the API lists and serves it.
    r = await project.http.get(f"{project.base}/storage/objects/data/rows.csv", headers=project.auth)
    assert r.status_code == 200 and r.content == body

    for name in ("data/b.txt", "data/sub/c.txt", "top.txt"):
        assert (await call(project, "/put-text", key=name, text=name)).status_code == 200
    head = (await call(project, "/head", key="data/b.txt")).json()["object"]
    assert head["size"] == len("data/b.txt") and head["contentType"] is None
    assert (await call(project, "/head", key="data/none.txt")).json() == {"object": None}
    assert (await call(project, "/get", key="data/none.txt")).status_code == 404

    listed = (await call(project, "/list", options=json.dumps({"prefix": "data/", "delimiter": "/"}))).json()
    assert [o["key"] for o in listed["objects"]] == ["data/b.txt", "data/rows.csv"]
    assert listed["delimitedPrefixes"] == ["data/sub/"] and listed["truncated"] is False
    # Page by page with the cursor.
    seen: list[str] = []
    options: dict[str, Any] = {"limit": 2}
    while True:
        page = (await call(project, "/list", options=json.dumps(options))).json()
        seen += [o["key"] for o in page["objects"]]
        if not page["truncated"]:
            break
        options["cursor"] = page["cursor"]
    assert seen == ["data/b.txt", "data/rows.csv", "data/sub/c.txt", "top.txt"]

    assert (await call(project, "/delete", keys=json.dumps("top.txt"))).json() == {"deleted": True}
    assert (await call(project, "/delete", keys=json.dumps(["data/b.txt", "data/sub/c.txt", "never.txt"]))
            ).json() == {"deleted": True}
    left = (await call(project, "/list")).json()
    assert [o["key"] for o in left["objects"]] == ["data/rows.csv"]


async def test_over_the_quota_put_throws_a_storage_error(project: Project) -> None:
    await grant(project)
    half = b"x" * (QUOTA // 2 + 1000)
    assert (await call(project, "/put", method="PUT", content=half, key="first.bin")).status_code == 200
    over = await call(project, "/put", method="PUT", content=half, key="second.bin")
    assert thrown(over) == ("StorageError", "storage_quota_exceeded", 413)
    assert str(QUOTA) in over.json()["message"]
    assert (await call(project, "/head", key="second.bin")).json() == {"object": None}
    # Replacing the object counts its size once, and room made by a delete is room.
    assert (await call(project, "/delete", keys=json.dumps(["first.bin"]))).status_code == 200
    assert (await call(project, "/put", method="PUT", content=half, key="second.bin")).status_code == 200
    status = (await project.http.get(f"{project.base}/storage", headers=project.auth)).json()
    assert status["usedBytes"] == len(half) and status["quotaBytes"] == QUOTA


async def test_a_put_of_a_stream_of_unknown_length_is_refused(project: Project) -> None:
    await grant(project)
    r = await call(project, "/put-stream", key="chunked")
    assert thrown(r) == ("StorageError", "length_required", 411)
    assert (await call(project, "/head", key="chunked")).json() == {"object": None}


async def test_a_key_never_reaches_another_projects_objects(server: Server) -> None:
    async with deployed(server) as alice, deployed(server) as mallory:
        await grant(alice)
        await grant(mallory)
        alice_id = await project_id(alice)
        assert (await call(alice, "/put-text", key="secret.txt", text="alice's")).status_code == 200
        assert (await call(mallory, "/put-text", key="mine.txt", text="mallory's")).status_code == 200
        # Keys that would climb out of the project's prefix are refused outright.
        for key in (f"../{alice_id}/secret.txt", f"a/../../{alice_id}/secret.txt", "../../", "./x", "/abs"):
            for path in ("/get", "/head", "/put-text"):
                assert thrown(await call(mallory, path, key=key, text="x"))[1:] == ("bad_request", 400), (key, path)
            assert thrown(await call(mallory, "/delete", keys=json.dumps([key])))[1:] == ("bad_request", 400)
        # Keys that look like another project's are the project's own keys (none there).
        for key in (f"p/{alice_id}/secret.txt", f"%2e%2e/{alice_id}/secret.txt", f"..%2F{alice_id}%2Fsecret.txt",
                    f"..\\{alice_id}\\secret.txt"):
            assert (await call(mallory, "/get", key=key)).status_code == 404, key
            assert (await call(mallory, "/head", key=key)).json() == {"object": None}
        for prefix in ("", "p/", f"p/{alice_id}/", "%2e%2e"):
            listed = (await call(mallory, "/list", options=json.dumps({"prefix": prefix}))).json()
            assert [o["key"] for o in listed["objects"]] == (["mine.txt"] if prefix == "" else []), prefix
        assert thrown(await call(mallory, "/list", options=json.dumps({"prefix": "../"})))[1:] == ("bad_request", 400)
        assert (await call(mallory, "/delete", keys=json.dumps([f"p/{alice_id}/secret.txt"]))).status_code == 200
        # A bad key among many: refused, and nothing deleted.
        assert thrown(await call(mallory, "/delete", keys=json.dumps(["mine.txt", "../x"])))[1:] == ("bad_request", 400)
        assert (await call(mallory, "/text", key="mine.txt")).json() == {"text": "mallory's"}
        # Alice's object is whole, and hers alone.
        assert (await call(alice, "/text", key="secret.txt")).json() == {"text": "alice's"}
        assert [o["key"] for o in (await call(alice, "/list")).json()["objects"]] == ["secret.txt"]


async def test_the_runtime_routes_are_the_runtimes_and_check_the_grant(project: Project) -> None:
    pid = await project_id(project)
    _, _, token, control = _runtime_config(project.server)
    base = f"{project.server.api}/v1/runtime/projects/{pid}/storage"
    async with httpx.AsyncClient(timeout=30) as client:
        for wrong in (None, control, token[:-1]):
            headers = {"x-svc-runtime-token": wrong} if wrong else {}
            r = await client.post(f"{base}/head", json={"key": "a"}, headers=headers)
            assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
            r = await client.put(f"{base}/object", params={"key": "a"}, content=b"x", headers=headers)
            assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
        # Not granted (a worker that kept its env.storage past a revoke would be told so).
        r = await client.post(f"{base}/head", json={"key": "a"}, headers={"x-svc-runtime-token": token})
        assert r.status_code == 404 and r.json()["code"] == "not_granted", r.text
        r = await client.put(f"{base}/object", params={"key": "a"}, content=b"x",
                             headers={"x-svc-runtime-token": token})
        assert r.status_code == 404 and r.json()["code"] == "not_granted", r.text
