"""What a browser gets from the edge (real nginx, real HTTP): the live deployment's files by Host,
index.html, Content-Type, ETag/304, Range, gzip; for unknown hosts, projects without a deployment
and missing files, a page for browsers and the JSON Error envelope for API clients."""

from __future__ import annotations

import gzip

from tests.edge.conftest import Running
from tests.edge.helpers import create_project, deploy
from tests.support.api import assert_error

INDEX = b"<!doctype html><title>home</title><h1>Hello from v1</h1>" + b"<p>padding</p>" * 100
CSS = b"body { color: rebeccapurple; }\n" * 50
JS = b"export const answer = 42;\n" * 40
DATA = bytes(range(256)) * 40  # 10 KiB of binary
# What browsers send on a navigation.
BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"}
API_CLIENTS: tuple[dict[str, str], ...] = ({}, {"accept": "application/json"}, {"accept": "*/*"})


async def test_serves_the_live_deployment(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    assert site.host == f"web-{alice.personal_org}.localhost"
    await deploy(running.ctx, site, {"index.html": INDEX, "style.css": CSS, "app.mjs": JS, "data.bin": DATA,
                                     "docs/index.html": b"<h1>docs</h1>", "img/logo.svg": b"<svg/>",
                                     "manifest.json": b'{"a": 1}', "mod.wasm": b"\0asm\1\0\0\0"})
    await running.edge.converge_now()
    http = running.http

    r = await http.get(site.host, "/")
    assert r.status_code == 200
    assert r.content == INDEX
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert "server" not in r.headers or r.headers["server"] == "nginx"  # server_tokens off: no version

    r = await http.get(site.host, "/docs/")
    assert (r.status_code, r.content) == (200, b"<h1>docs</h1>")
    r = await http.get(site.host, "/docs")
    assert r.status_code == 301
    assert r.headers["location"] == "/docs/"

    types = {"/style.css": "text/css", "/app.mjs": "application/javascript", "/data.bin": "application/octet-stream",
             "/img/logo.svg": "image/svg+xml", "/manifest.json": "application/json", "/mod.wasm": "application/wasm",
             "/index.html": "text/html"}
    for path, mime in types.items():
        r = await http.get(site.host, path)
        assert r.status_code == 200, path
        assert r.headers["content-type"].split(";")[0] == mime, path


async def test_etag_range_and_gzip(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, {"index.html": INDEX, "style.css": CSS, "data.bin": DATA})
    await running.edge.converge_now()
    http = running.http

    r = await http.get(site.host, "/data.bin")
    etag = r.headers["etag"]
    r = await http.get(site.host, "/data.bin", headers={"if-none-match": etag})
    assert r.status_code == 304
    assert r.content == b""

    r = await http.get(site.host, "/data.bin", headers={"range": "bytes=100-199"})
    assert r.status_code == 206
    assert r.headers["content-range"] == f"bytes 100-199/{len(DATA)}"
    assert r.content == DATA[100:200]
    r = await http.get(site.host, "/data.bin", headers={"range": "bytes=-10"})
    assert (r.status_code, r.content) == (206, DATA[-10:])

    # gzip for text types when the client accepts it; never for a client that does not.
    r = await http.client.get("/style.css", headers={"host": site.host, "accept-encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in r.headers["vary"].lower()
    assert r.content == CSS  # httpx decodes it
    raw = await http.client.send(http.client.build_request("GET", "/style.css", headers={
        "host": site.host, "accept-encoding": "gzip"}), stream=True)
    body = b"".join([chunk async for chunk in raw.aiter_raw()])
    await raw.aclose()
    assert len(body) < len(CSS) and gzip.decompress(body) == CSS
    r = await http.client.get("/style.css", headers={"host": site.host, "accept-encoding": "identity"})
    assert "content-encoding" not in r.headers
    assert r.content == CSS
    # A compressed response's ETag (weak) still gives 304.
    r = await http.client.get("/", headers={"host": site.host, "accept-encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip"
    r = await http.client.get("/", headers={"host": site.host, "accept-encoding": "gzip",
                                            "if-none-match": r.headers["etag"]})
    assert r.status_code == 304


async def test_errors_are_json_for_api_clients(running: Running) -> None:
    alice = await running.svc.login("alice")
    empty = await create_project(alice, "empty")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, {"index.html": INDEX, "assets/app.css": CSS})
    await running.edge.converge_now()
    http = running.http

    for accept in API_CLIENTS:
        for path in ("/", "/index.html", "/x.css", "/__svc/password"):
            r = await http.get("nobody-here.localhost", path, headers=accept)
            assert r.content == (b'{"code":"unknown_hostname","message":"No project is served at this hostname",'
                                 b'"details":null}')
            assert_error(r, 404, "unknown_hostname")
            assert r.headers["content-type"] == "application/json"
        assert running.check.proxied == []  # unknown hosts never reach the API

        for path in ("/", "/about.html"):
            r = await http.get(empty.host, path, headers=accept)
            assert r.content == b'{"code":"not_found","message":"This project has no deployment yet","details":null}'
            assert_error(r, 404, "not_found")
            assert r.headers["content-type"] == "application/json"

        for path in ("/missing.html", "/assets/", "/nope/"):
            r = await http.get(site.host, path, headers=accept)
            assert r.content == b'{"code":"not_found","message":"No such file in this deployment","details":null}'
            assert_error(r, 404, "not_found")
            assert r.headers["content-type"] == "application/json"

    r = await http.request("POST", site.host, "/index.html", content=b"x=1")
    assert_error(r, 405, "method_not_allowed")


async def test_browsers_get_pages(running: Running) -> None:
    alice = await running.svc.login("alice")
    empty = await create_project(alice, "empty")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, {"index.html": INDEX})
    await running.edge.converge_now()
    http = running.http

    for accept in (BROWSER, {"accept": "text/html"}, {"accept": "TEXT/HTML;q=0.9"}):
        for path in ("/", "/x.css", "/__svc/password"):
            r = await http.get("nobody-here.localhost", path, headers=accept)
            assert r.status_code == 404
            assert r.headers["content-type"] == "text/html; charset=utf-8"
            assert "<title>Unknown host</title>" in r.text
            assert "No project is served at this address" in r.text
        for path in ("/", "/about.html"):
            r = await http.get(empty.host, path, headers=accept)
            assert r.status_code == 404
            assert r.headers["content-type"] == "text/html; charset=utf-8"
            assert "<h1>No deployment yet</h1>" in r.text
            assert "<code>svc deploy</code>" in r.text
        r = await http.get(site.host, "/missing.html", headers=accept)
        assert r.status_code == 404
        assert "<h1>Not found</h1>" in r.text
    assert running.check.proxied == []
    # Self-contained: no scripts, nothing loaded from elsewhere.
    r = await http.get(empty.host, "/", headers=BROWSER)
    assert r.text.startswith("<!doctype html>")
    assert "<script" not in r.text and "src=" not in r.text and "http" not in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
    assert "accept" in r.headers["vary"].lower()
    # HEAD: the status and type without the page.
    r = await http.request("HEAD", empty.host, "/", headers=BROWSER)
    assert (r.status_code, r.content) == (404, b"")
    assert r.headers["content-type"] == "text/html; charset=utf-8"


async def test_deployment_404_page(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    await deploy(running.ctx, site, {"index.html": INDEX, "404.html": b"<h1>lost?</h1>"})
    await running.edge.converge_now()
    # The deployment's own page wins, for browsers and API clients alike.
    for accept in (*API_CLIENTS, BROWSER):
        r = await running.http.get(site.host, "/missing", headers=accept)
        assert r.status_code == 404
        assert r.content == b"<h1>lost?</h1>"
        assert r.headers["content-type"].startswith("text/html")


async def test_svc_paths_go_to_the_api(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    empty = await create_project(alice, "empty")
    await deploy(running.ctx, site, {"__svc/password": b"must never be served", "index.html": INDEX})
    await running.edge.converge_now()
    r = await running.http.get(site.host, "/__svc/password?next=/a", headers={"x-svc-host": "evil.localhost"})
    assert r.status_code == 200
    assert r.text == f"svc page /v1/edge/password for {site.host}"
    r = await running.http.request("POST", empty.host, "/__svc/callback", content=b"code=1")
    assert r.text == f"svc page /v1/edge/callback for {empty.host}"
    assert running.check.proxied == [
        {"path": "/v1/edge/password", "query": "next=/a", "host": site.host, "method": "GET"},
        {"path": "/v1/edge/callback", "query": "", "host": empty.host, "method": "POST"}]
