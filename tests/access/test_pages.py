"""The browser pages: the password page of a protected host (/__svc/password at the edge) with its
rate limit, and the dashboard's authorize page of the org login round trip."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from svc.settings import Settings
from tests.access.helpers import HTML, JSON, Edge, make_site, query_of, set_cookie_value, set_mode
from tests.support import stores
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.idp import idp_env

PASSWORD = "open sesame 123"


@pytest.fixture
async def edge(svc: Svc) -> AsyncIterator[Edge]:
    e = Edge(svc)
    yield e
    await e.aclose()


def _nonce_ok(r: httpx.Response) -> None:
    """Self-contained page: inline script/style only by the CSP nonce, nothing loaded from elsewhere."""
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    nonce = re.search(r"'nonce-([^']+)'", csp)
    assert nonce is not None
    assert not re.search(r"""(src|href)=["']?https?://""", r.text)
    for tag in re.findall(r"<script(?![^>]*application/json)[^>]*>", r.text):
        assert f'nonce="{nonce.group(1)}"' in tag
    assert r.headers["cache-control"] == "no-store"


async def test_password_page_wrong_then_right_password(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "password", PASSWORD)
    r = await edge.password_form(site.host, "/guide/?a=1&b=<2>")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert 'action="/__svc/password"' in r.text and 'type="password"' in r.text
    assert f'value="{html.escape("/guide/?a=1&b=<2>", quote=True)}"' in r.text  # escaped, never raw
    assert "<2>" not in r.text
    _nonce_ok(r)

    r = await edge.password(site.host, "not it at all", "/guide/")
    assert r.status_code == 401
    assert "Wrong password" in r.text and 'action="/__svc/password"' in r.text
    assert "set-cookie" not in r.headers
    assert_error(await edge.password(site.host, "not it at all", accept=JSON), 401, "unauthorized")
    assert_error(await edge.password(site.host, "", accept=JSON), 401, "unauthorized")

    r = await edge.password(site.host, PASSWORD, "/guide/")
    assert r.status_code == 303 and r.headers["location"] == "/guide/"
    assert (await edge.check(site.host, cookie=set_cookie_value(r))).status_code == 204


async def test_password_page_only_returns_to_paths(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "password", PASSWORD)
    for evil in ("//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"):
        r = await edge.password(site.host, PASSWORD, evil)
        assert r.status_code == 303 and r.headers["location"] == "/", evil
        form = await edge.password_form(site.host, evil)
        assert 'name="next" value="/"' in form.text


async def test_password_page_of_other_hosts(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    # Not protected by a password: nothing to unlock, back to the path.
    r = await edge.password_form(site.host, "/x")
    assert r.status_code == 303 and r.headers["location"] == "/x"
    await set_mode(alice, site, "org")
    r = await edge.password(site.host, "whatever-it-is", "/x")
    assert r.status_code == 303 and "set-cookie" not in r.headers
    assert_error(await edge.password_form("nobody-here.localhost", accept=JSON), 404, "unknown_hostname")
    assert (await edge.password_form("nobody-here.localhost")).status_code == 404
    # Not a form.
    r = await edge.http.post("/v1/edge/password", json={"password": PASSWORD},
                             headers={"x-svc-host": site.host, **JSON})
    assert_error(r, 400, "bad_request")
    r = await edge.http.post("/v1/edge/password", content=b"password=\xff\xfe",
                             headers={"x-svc-host": site.host, "content-type": "application/x-www-form-urlencoded",
                                      **JSON})
    assert_error(r, 400, "bad_request")


async def test_password_tries_are_rate_limited_per_host_and_client(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice, "one")
    other = await make_site(alice, "two")
    for s in (site, other):
        await set_mode(alice, s, "password", PASSWORD)
    for _ in range(10):
        assert (await edge.password(site.host, "wrong guess!")).status_code == 401
    r = await edge.password(site.host, PASSWORD)  # even the right one, until the minute has passed
    assert r.status_code == 429 and "set-cookie" not in r.headers
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert 'action="/__svc/password"' in r.text
    body = assert_error(await edge.password(site.host, PASSWORD, accept=JSON), 429, "rate_limited")
    assert body["details"]["retryAfter"] >= 1
    # Another host, and another client address on the same host, are not affected.
    assert (await edge.password(other.host, PASSWORD)).status_code == 303
    elsewhere = Edge(svc, client=("198.51.100.7", 50000))
    try:
        assert (await elsewhere.password(site.host, PASSWORD)).status_code == 303
    finally:
        await elsewhere.aclose()


async def test_the_cookie_is_secure_when_the_edge_is_https(settings: Settings) -> None:
    https = configured(settings, edge_public_scheme="https", edge_public_port=443)
    async with running_svc(https) as svc:
        alice = await svc.login("alice")
        site = await make_site(alice)
        await set_mode(alice, site, "password", PASSWORD)
        edge = Edge(svc)
        try:
            r = await edge.check(site.host, uri="/a")
            assert r.headers["x-svc-login"] == f"https://{site.host}/__svc/password?next=/a"
            r = await edge.password(site.host, PASSWORD)
            header = next(h for h in r.headers.get_list("set-cookie") if h.startswith("svc_access="))
            assert "secure" in header.lower() and "domain" not in header.lower()
        finally:
            await edge.aclose()


async def test_authorize_page(svc: Svc) -> None:
    """The org login round trip's page is the dashboard's: signed in there, the visitor goes straight
    back to the site with a one-time code; not signed in, to sign-in first and back here."""
    alice = await svc.login("alice")
    bob = await svc.login("bob")
    site = await make_site(alice)
    await set_mode(alice, site, "org")
    params = {"to": site.host, "next": "/a?b=1"}
    r = await svc.anon.get("/access/authorize", params=params, headers=HTML)
    assert r.status_code == 303
    here = f"/access/authorize%3Fto%3D{site.host}%26next%3D%252Fa%253Fb%253D1"
    assert r.headers["location"] == f"/signin?next={here}"
    async with svc.client() as browser:
        browser.cookies.set("svc_session", alice.token)
        r = await browser.get("/access/authorize", params=params, headers=HTML)
        assert r.status_code == 303 and r.headers["location"].startswith(f"http://{site.host}")
        assert query_of(r.headers["location"])["code"] and query_of(r.headers["location"])["next"] == "/a?b=1"
        browser.cookies.set("svc_session", bob.token)  # not a member of alice's org
        r = await browser.get("/access/authorize", params=params, headers=HTML)
        assert r.status_code == 403 and "not a member" in r.text and "bob" in r.text
    # A bad link is refused before anyone signs in: a page for a browser, the envelope for a script.
    r = await svc.anon.get("/access/authorize", params={"to": site.host, "next": "//evil"}, headers=HTML)
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    assert_error(await svc.anon.get("/access/authorize", params={"to": site.host, "next": "https://evil/"},
                                    headers=JSON), 400, "bad_request")
    assert_error(await svc.anon.get("/access/authorize", params={"next": "/"}, headers=JSON), 400)
    assert_error(await svc.anon.get("/access/authorize", params={"to": "gone.localhost", "next": "/"},
                                    headers=JSON), 404, "unknown_hostname")


async def test_sign_in_offers_the_identity_provider_only_where_it_may_return(settings: Settings) -> None:
    async with idp_env(settings, "github", idp_redirects="") as env:  # allowlist: SVC_PUBLIC_URL
        r = await env.svc.anon.get("/signin", params={"next": "/access/authorize?to=x&next=/"}, headers=HTML)
        assert "Sign in with GitHub" in r.text
        start = re.search(r'href="(/v1/auth/github/start\?redirect=[^"]+)"', r.text)
        assert start is not None
        r = await env.svc.anon.get(html.unescape(start.group(1)))  # svc accepts its own page as the return
        assert r.status_code == 302
    async with idp_env(settings, "github") as env:  # an allowlist without SVC_PUBLIC_URL
        r = await env.svc.anon.get("/signin", headers=HTML)
        assert r.status_code == 200 and "Sign in with" not in r.text


async def test_password_tries_are_counted_together_by_every_svc_of_a_store(tmp_path: Path) -> None:
    """Two svc processes' apps on one PostgreSQL store (as replicas behind a load balancer): the
    tries a client spreads over both are counted once, so the limit is not doubled."""
    url = await stores.new_pg_database()
    try:
        def settings_of(name: str) -> Settings:
            return Settings(data_dir=tmp_path / name, database_url=url, enable_dev_auth=True,
                            public_url="http://svc.test", job_poll_seconds=0.05)

        async with running_svc(settings_of("a")) as one, running_svc(settings_of("b")) as two:
            alice = await one.login("alice")
            site = await make_site(alice, "shared")
            await set_mode(alice, site, "password", PASSWORD)
            edges = [Edge(one), Edge(two)]
            try:
                for n in range(10):
                    assert (await edges[n % 2].password(site.host, "wrong guess!")).status_code == 401
                for edge in edges:
                    assert_error(await edge.password(site.host, PASSWORD, accept=JSON), 429, "rate_limited")
            finally:
                for edge in edges:
                    await edge.aclose()
    finally:
        await stores.drop_pg_database(url)
