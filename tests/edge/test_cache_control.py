"""Cache-Control at the edge, counted line by line: exactly one on every answer. Public projects'
files revalidate on every use (`public, max-age=0, must-revalidate`); the edge's own error answers
are `no-store`; every answer of a protected project (let through by the cookie or the bypass
header, its login redirects, its error pages) is `private, no-store`, so neither a shared cache
nor the browser keeps it. The API's pages under /__svc/ keep one `private, no-store` line."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from tests.edge.conftest import Running
from tests.edge.helpers import BYPASS, GOOD_COOKIE, create_project, deploy, set_access

PUBLIC = "public, max-age=0, must-revalidate"
PRIVATE = "private, no-store"
BROWSER = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
FILES = {"index.html": b"<h1>home</h1>", "style.css": b"body{}" * 100, "docs/index.html": b"<h1>docs</h1>",
         "404.html": b"<h1>lost?</h1>"}


def one(r: httpx.Response, value: str) -> None:
    lines = r.headers.get_list("cache-control")
    assert lines == [value], (r.status_code, r.request.url, lines)
    if value == PRIVATE:
        assert "public" not in str(r.headers).lower()


async def test_public_project(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "web")
    bare = await create_project(alice, "bare")  # no 404.html of its own
    empty = await create_project(alice, "empty")
    await deploy(running.ctx, site, FILES)
    await deploy(running.ctx, bare, {"index.html": b"<h1>bare</h1>"})
    await running.edge.converge_now()
    http = running.http

    r = await http.get(site.host, "/style.css")
    assert r.status_code == 200
    one(r, PUBLIC)
    r304 = await http.get(site.host, "/style.css", headers={"if-none-match": r.headers["etag"]})
    assert r304.status_code == 304
    one(r304, PUBLIC)
    r = await http.get(site.host, "/style.css", headers={"range": "bytes=0-9", "accept-encoding": "identity"})
    assert r.status_code == 206
    one(r, PUBLIC)
    r = await http.get(site.host, "/docs")
    assert r.status_code == 301
    one(r, PUBLIC)
    r = await http.get(site.host, "/missing", headers=BROWSER)  # the deployment's own 404 page
    assert (r.status_code, r.content) == (404, FILES["404.html"])
    one(r, PUBLIC)

    # The edge's own answers: one `no-store`.
    for accept in ({}, BROWSER):
        for host, path in ((bare.host, "/missing"), (empty.host, "/"), ("nobody.localhost", "/")):
            r = await http.get(host, path, headers=accept)
            assert r.status_code == 404
            one(r, "no-store")
    r = await http.request("POST", site.host, "/index.html", content=b"x")
    assert r.status_code == 405
    one(r, "no-store")
    # The API's pages (which send their own no-store) keep a single line.
    r = await http.get(site.host, "/__svc/password?next=/")
    assert r.status_code == 200
    one(r, PRIVATE)


@pytest.mark.parametrize("mode", ["password", "org"])
async def test_protected_project(running: Running, mode: str) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    bare = await create_project(alice, "bare")
    empty = await create_project(alice, "empty")
    await deploy(running.ctx, site, FILES)
    await deploy(running.ctx, bare, {"index.html": b"<h1>bare</h1>"})
    for project in (site, bare, empty):
        await set_access(running.ctx, project, mode)
    await running.edge.converge_now()
    http = running.http
    cookie = {"cookie": GOOD_COOKIE}

    # Not let in: the login redirect, or a 401 when the check names no login page.
    for headers in ({}, {"cookie": "svc_access=forged"}, {"svc-access-bypass": "wrong"}, BROWSER):
        r = await http.get(site.host, "/", headers=headers)
        assert r.status_code == 302
        one(r, PRIVATE)
    r = await http.get(site.host, "/no-login-url")
    assert r.status_code == 401
    one(r, PRIVATE)

    # Let in by the cookie (first asked, then from the check cache) and by the bypass header.
    for headers in (cookie, cookie, {"svc-access-bypass": BYPASS}):
        for path, status in (("/", 200), ("/style.css", 200), ("/docs/", 200), ("/docs", 301)):
            r = await http.get(site.host, path, headers=headers)
            assert r.status_code == status, path
            one(r, PRIVATE)
        r = await http.get(site.host, "/style.css",
                           headers={**headers, "range": "bytes=0-9", "accept-encoding": "identity"})
        assert r.status_code == 206
        one(r, PRIVATE)
        etag = (await http.get(site.host, "/style.css", headers=headers)).headers["etag"]
        r = await http.get(site.host, "/style.css", headers={**headers, "if-none-match": etag})
        assert r.status_code == 304
        one(r, PRIVATE)
        # Error pages: the deployment's own, the edge's (page and JSON), 405.
        r = await http.get(site.host, "/missing", headers={**headers, **BROWSER})
        assert (r.status_code, r.content) == (404, FILES["404.html"])
        one(r, PRIVATE)
        for accept in ({}, BROWSER):
            for host in (bare.host, empty.host):
                r = await http.get(host, "/missing", headers={**headers, **accept})
                assert r.status_code == 404
                one(r, PRIVATE)
        r = await http.request("POST", site.host, "/index.html", content=b"x", headers=headers)
        assert r.status_code == 405
        one(r, PRIVATE)

    r = await http.get(site.host, "/__svc/password?next=/")
    assert r.status_code == 200
    one(r, PRIVATE)

    # The check cannot be asked (the API is down): 500, fails closed, still private.
    running.edge.options = dataclasses.replace(running.edge.options, api_url="http://127.0.0.1:9")
    await running.edge.reconfigure()
    r = await running.http.fresh_get(bare.host, "/")
    assert r.status_code == 500
    one(r, PRIVATE)
