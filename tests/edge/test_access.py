"""Protected hosts (access mode org/password) through auth_request, against a fake of the API's
/v1/edge/check (204 for the cookie `svc_access=good` or the bypass header, else 401 + X-Svc-Login):
the redirect to the login URL, allowed answers cached per host + generation + cookie + bypass,
401s never cached, a policy change (generation bump) invalidating cached answers at once."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.edge.conftest import Running, edge_settings, started_edge
from tests.edge.helpers import BYPASS, GOOD_COOKIE, FakeCheck, create_project, deploy, set_access
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
    # A different cookie header is a different key.
    r = await http.get(site.host, "/", headers={"cookie": GOOD_COOKIE + "; theme=dark"})
    assert r.status_code == 200
    assert len(checks) == 4

    # The bypass header passes (and is what the check is asked about).
    r = await http.get(site.host, "/", headers={"svc-access-bypass": BYPASS})
    assert (r.status_code, r.content) == (200, INDEX)
    assert checks[-1]["bypass"] == BYPASS
    r = await http.get(site.host, "/", headers={"svc-access-bypass": "wrong"})
    assert r.status_code == 302

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
    r = await running.http.get(site.host, "/", headers={"cookie": GOOD_COOKIE})
    body = assert_error(r, 404, "not_found")
    assert body["message"] == "This project has no deployment yet"


async def test_check_endpoint_down_is_a_json_500(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    await deploy(running.ctx, site, {"index.html": INDEX})
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    # Point the edge at an address where nothing listens: it must refuse, not serve.
    running.edge.options = dataclasses.replace(running.edge.options, api_url="http://127.0.0.1:9")
    running.edge._text = None  # force a rewrite
    await running.edge.converge_now()
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
