"""Protected hosts (access mode org/password) through the access check, against a fake of the API's
/v1/edge/check (204 for a `svc_access=good` cookie or the bypass header, else 401 + X-Svc-Login):
the redirect to the login URL, allowed answers cached per host + generation + svc_access cookie +
a fingerprint of the bypass header (in memory; no site cookie, no bypass secret kept anywhere),
headers with several svc_access cookies asked about every time, 401s never cached, a policy
change (generation bump) invalidating cached answers at once."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

from tests.edge.conftest import Running, edge_settings, started_edge
from tests.edge.helpers import BYPASS, GOOD_COOKIE, REFUSED_COOKIE, FakeCheck, create_project, deploy, set_access
from tests.support.api import assert_error, running_svc

INDEX = b"<h1>members only</h1>"
CSS = b"body{}" * 100


async def test_password_host_redirects_then_serves_with_a_cookie(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    public = await create_project(alice, "open")
    await deploy(running.ctx, site, {"index.html": INDEX, "style.css": CSS})
    await deploy(running.ctx, public, {"index.html": b"open"})
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    http, checks = running.http, running.check.checks

    r = await http.get(site.host, "/style.css?v=1")
    assert r.status_code == 302
    assert r.headers["location"] == f"http://svc.test/access/authorize?to={site.host}&next=/style.css?v=1"
    assert INDEX not in r.content and CSS not in r.content
    assert checks[-1] == {"host": site.host, "uri": "/style.css?v=1", "cookie": None, "bypass": None,
                          "method": "GET"}
    # Refusals are never cached: every try asks again.
    r = await http.get(site.host, "/", headers={"cookie": "svc_access=forged"})
    assert r.status_code == 302
    assert len(checks) == 2

    r = await http.get(site.host, "/", headers={"cookie": GOOD_COOKIE})
    assert (r.status_code, r.content) == (200, INDEX)
    assert len(checks) == 3
    assert checks[-1]["cookie"] == GOOD_COOKIE
    # Within the cache window the allowed answer is reused, for any path of the host.
    for path in ("/", "/style.css", "/"):
        r = await http.get(site.host, path, headers={"cookie": GOOD_COOKIE})
        assert r.status_code == 200
    assert len(checks) == 3
    r = await http.get(site.host, "/missing.txt", headers={"cookie": GOOD_COOKIE})
    assert_error(r, 404, "not_found")
    # The site's own cookies do not decide access: same svc_access cookie, same cached answer
    # (and the check still gets the whole Cookie header).
    r = await http.get(site.host, "/", headers={"cookie": "theme=dark; " + GOOD_COOKIE + "; session=abc"})
    assert r.status_code == 200
    assert len(checks) == 3

    # The bypass header passes (asked once, then cached under a fingerprint of it), and its answer
    # opens nothing for another bypass value or for a request without one.
    for _ in range(2):
        r = await http.get(site.host, "/", headers={"svc-access-bypass": BYPASS})
        assert (r.status_code, r.content) == (200, INDEX)
    assert checks[-1]["bypass"] == BYPASS
    assert len(checks) == 4
    for headers in ({"svc-access-bypass": "wrong"}, {"svc-access-bypass": BYPASS[:-1]},
                    {"svc-access-bypass": BYPASS + "x"}, {}):
        assert (await http.get(site.host, "/", headers=headers)).status_code == 302
    assert len(checks) == 8

    # Public hosts never ask.
    before = len(checks)
    r = await http.get(public.host, "/")
    assert (r.status_code, r.content) == (200, b"open")
    assert len(checks) == before


async def test_policy_change_invalidates_cached_answers(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    await deploy(running.ctx, site, {"index.html": INDEX})
    await set_access(running.ctx, site, "org")
    await running.edge.converge_now()
    http, checks = running.http, running.check.checks

    assert (await http.get(site.host, "/", headers={"cookie": GOOD_COOKIE})).status_code == 200
    assert (await http.get(site.host, "/", headers={"cookie": GOOD_COOKIE})).status_code == 200
    assert len(checks) == 1

    # A policy change bumps the project's access generation: the cached answer is not reused.
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    assert (await http.get(site.host, "/", headers={"cookie": GOOD_COOKIE})).status_code == 200
    assert len(checks) == 2

    # Back to public: no check, no redirect.
    await set_access(running.ctx, site, "public")
    await running.edge.converge_now()
    r = await http.get(site.host, "/")
    assert (r.status_code, r.content) == (200, INDEX)
    assert len(checks) == 2


async def test_svc_paths_skip_the_check(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    await deploy(running.ctx, site, {"index.html": INDEX})
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    r = await running.http.get(site.host, "/__svc/password?next=/")
    assert r.status_code == 200
    assert r.text == f"svc page /v1/edge/password for {site.host}"
    assert running.check.checks == []
    # The internal check location is not reachable from outside.
    r = await running.http.get(site.host, "/__svc/_check", headers={"cookie": GOOD_COOKIE})
    assert r.status_code == 404
    assert INDEX not in r.content


async def test_protected_without_deployment_checks_first(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    r = await running.http.get(site.host, "/")
    assert r.status_code == 302
    # Asked once, then answered from the check cache: the same answer.
    for _ in range(2):
        r = await running.http.get(site.host, "/", headers={"cookie": GOOD_COOKIE})
        body = assert_error(r, 404, "not_found")
        assert body["message"] == "This project has no deployment yet"
    assert len(running.check.checks) == 2


async def test_a_refusal_answers_the_edges_404_never_a_file_of_the_deployment(running: Running) -> None:
    # The check's 403 (e.g. host_not_routed, while the edge's table and the API disagree): the
    # deployment's own /404.html is behind the policy too, so the edge answers its own page.
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    own_404 = b"<h1>the project's own 404, members only</h1>"
    await deploy(running.ctx, site, {"index.html": INDEX, "404.html": own_404})
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    http = running.http
    for path in ("/", "/missing.txt", "/404.html"):
        r = await http.get(site.host, path, headers={"cookie": REFUSED_COOKIE})
        assert_error(r, 404, "not_found")
        assert own_404 not in r.content and INDEX not in r.content
        r = await http.get(site.host, path, headers={"cookie": REFUSED_COOKIE, "accept": "text/html"})
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
        assert own_404 not in r.content and INDEX not in r.content
    assert running.check.checks[-1]["cookie"] == REFUSED_COOKIE
    # Allowed, a missing file is the project's own 404 page.
    r = await http.get(site.host, "/missing.txt", headers={"cookie": GOOD_COOKIE})
    assert (r.status_code, r.content) == (404, own_404)


async def test_check_endpoint_down_is_a_json_500(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    await deploy(running.ctx, site, {"index.html": INDEX})
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    # Point the edge at an address where nothing listens: it must refuse, not serve.
    running.edge.options = dataclasses.replace(running.edge.options, api_url="http://127.0.0.1:9")
    await running.edge.reconfigure()
    r = await running.http.fresh_get(site.host, "/")
    assert_error(r, 500, "internal")
    assert INDEX not in r.content


async def test_cache_off_asks_every_time(tmp_path: Path, check: FakeCheck) -> None:
    settings = edge_settings(tmp_path / "data", edge_check_cache_seconds=0)
    async with running_svc(settings) as svc, started_edge(svc, check) as r:
        alice = await svc.login("alice")
        site = await create_project(alice, "secret")
        await deploy(svc.ctx, site, {"index.html": INDEX})
        await set_access(svc.ctx, site, "password")
        await r.edge.converge_now()
        for _ in range(3):
            assert (await r.http.get(site.host, "/index.html", headers={"cookie": GOOD_COOKIE})).status_code == 200
        assert len(check.checks) == 3


async def _protected_site(running: Running, mode: str = "password") -> str:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    await deploy(running.ctx, site, {"index.html": INDEX})
    await set_access(running.ctx, site, mode)
    await running.edge.converge_now()
    return site.host


async def test_an_allowed_cookie_opens_nothing_for_another_visitor(running: Running) -> None:
    host = await _protected_site(running)
    http, checks = running.http, running.check.checks
    assert (await http.get(host, "/", headers={"cookie": GOOD_COOKIE})).status_code == 200
    assert (await http.get(host, "/", headers={"cookie": GOOD_COOKIE})).status_code == 200
    assert len(checks) == 1
    # Another visitor: another svc_access value, with or without the first one's other cookies.
    for cookie in ("svc_access=other", "svc_access=goo", "svc_access=good2", "svc_access=", "xsvc_access=good",
                   "svc_access=other; session=abc", "svc_access_x=good"):
        before = len(checks)
        r = await http.get(host, "/", headers={"cookie": cookie})
        assert r.status_code == 302, cookie
        assert len(checks) == before + 1, cookie
    assert (await http.get(host, "/")).status_code == 302


async def test_a_planted_svc_access_cookie_neither_hides_the_real_one_nor_gets_in(running: Running) -> None:
    """A sibling host can plant its own svc_access cookie (sent first, with a longer path). The
    visitor still gets in with the real one, and the planted value alone never reuses that answer."""
    host = await _protected_site(running, "org")
    http, checks = running.http, running.check.checks
    both = "svc_access=planted; " + GOOD_COOKIE
    for _ in range(2):
        r = await http.get(host, "/", headers={"cookie": both})
        assert (r.status_code, r.content) == (200, INDEX)
        assert checks[-1]["cookie"] == both
    assert len(checks) == 2  # a header naming svc_access twice is never answered from the cache
    for cookie in ("svc_access=planted", "svc_access=planted; theme=dark", "svc_access=planted; svc_access=x"):
        before = len(checks)
        assert (await http.get(host, "/", headers={"cookie": cookie})).status_code == 302, cookie
        assert len(checks) == before + 1
    # The real cookie alone is cached as before.
    assert (await http.get(host, "/", headers={"cookie": GOOD_COOKIE})).status_code == 200
    assert (await http.get(host, "/", headers={"cookie": GOOD_COOKIE})).status_code == 200
    assert len(checks) == 6


async def test_a_cookie_nginx_reads_otherwise_is_never_stored(running: Running) -> None:
    """The check strips any whitespace around a cookie; nginx reads `svc_access` only after a
    space. An answer for such a header must not be stored under "no svc_access cookie"."""
    host = await _protected_site(running)
    http, checks = running.http, running.check.checks
    for _ in range(2):
        r = await http.get(host, "/", headers={"cookie": "a=1;\tsvc_access=good"})
        assert (r.status_code, r.content) == (200, INDEX)
    assert len(checks) == 2
    for headers in ({}, {"cookie": "a=1"}, {"cookie": "a=1;\tsvc_access=forged"}):
        assert (await http.get(host, "/", headers=headers)).status_code == 302
    assert len(checks) == 5


def _files_holding(root: Path, secrets: tuple[bytes, ...]) -> list[str]:
    """Files under root holding any of the secrets (what this user may not read is skipped)."""
    found = []
    for path in root.rglob("*"):
        try:
            if not path.is_file() or path.is_symlink():
                continue
            data = path.read_bytes()
        except OSError:
            continue
        found += [f"{path}: {secret!r}" for secret in secrets if secret in data]
    return found


async def test_no_credential_is_kept_on_disk(running: Running) -> None:
    """The check cache is nginx's shared memory: no file anywhere holds a cookie or a bypass secret,
    yet each credential is asked about once, then answered from the cache."""
    host = await _protected_site(running)
    http, checks = running.http, running.check.checks
    app_cookie = "session=APPSECRET-77c1"
    for _ in range(3):
        r = await http.get(host, "/", headers={"cookie": f"{app_cookie}; {GOOD_COOKIE}; theme=dark"})
        assert r.status_code == 200
        r = await http.get(host, "/", headers={"svc-access-bypass": BYPASS, "cookie": app_cookie})
        assert r.status_code == 200
    assert len(checks) == 2  # each asked once, then answered from the cache
    secrets = (b"APPSECRET", BYPASS.encode(), BYPASS[8:].encode())
    assert _files_holding(running.ctx.settings.data_dir, secrets) == []
    # Where an earlier edge kept the cache (looked at, not written).
    shm = Path("/dev/shm")
    if shm.is_dir():
        assert _files_holding(shm, secrets) == []


async def test_a_request_body_is_not_announced_to_the_check(running: Running) -> None:
    """The check is a GET without the request's body: it must not be told there is one (the API
    would wait for it and take the next request on that connection for the rest)."""
    host = await _protected_site(running)
    asks = {"cookie": "svc_access=planted; " + GOOD_COOKIE}  # never answered from the cache

    async def chunked() -> AsyncIterator[bytes]:
        yield b"chunked "
        yield b"body"

    for body in (b"x" * 100, chunked()):
        r = await running.http.request("POST", host, "/index.html", content=body, headers=asks)
        assert r.status_code == 405
        for _ in range(3):
            r = await running.http.get(host, "/index.html", headers=asks)
            assert (r.status_code, r.content) == (200, INDEX)
    assert [c["method"] for c in running.check.checks] == ["GET"] * 8
