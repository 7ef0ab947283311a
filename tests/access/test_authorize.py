"""The org login round trip: POST /v1/access/authorize -> the host's /__svc/callback -> cookie,
and the edge check of org mode (membership re-checked every time)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from svc.adapters.edge.settings import edge_url
from svc.domains.access import cookies
from svc.kit.clock import utcnow
from svc.models import AccessGrant, Project
from tests.access.helpers import (
    JSON,
    Edge,
    Site,
    add_member,
    audit_rows,
    make_site,
    query_of,
    set_cookie_value,
    set_mode,
)
from tests.support.api import Svc, User, assert_error, wait_operation


@pytest.fixture
async def edge(svc: Svc) -> AsyncIterator[Edge]:
    e = Edge(svc)
    yield e
    await e.aclose()


async def _authorize(user: User, site: Site, next_path: str = "/") -> str:
    r = await user.client.post("/v1/access/authorize", json={"to": site.host, "next": next_path})
    assert r.status_code == 200, r.text
    assert set(r.json()) == {"redirect"}
    redirect: str = r.json()["redirect"]
    return redirect


async def _login(edge: Edge, user: User, site: Site, next_path: str = "/") -> str:
    code = query_of(await _authorize(user, site, next_path))["code"]
    r = await edge.callback(site.host, code)
    assert r.status_code == 302, r.text
    return set_cookie_value(r)


async def test_round_trip_gives_a_host_cookie_and_returns_to_next(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "org")
    r = await edge.check(site.host, uri="/docs/page?x=1")
    assert_error(r, 401, "unauthorized")
    login = r.headers["x-svc-login"]
    assert login == f"http://svc.test/access/authorize?to={site.host}&next=/docs/page%3Fx%3D1"
    assert query_of(login) == {"to": site.host, "next": "/docs/page?x=1"}

    redirect = await _authorize(alice, site, "/docs/page?x=1")
    assert redirect.startswith(f"{edge_url(svc.ctx.config, site.host)}/__svc/callback?code=")
    assert query_of(redirect)["next"] == "/docs/page?x=1"
    r = await edge.callback(site.host, query_of(redirect)["code"])
    assert r.status_code == 302
    assert r.headers["location"] == "/docs/page?x=1"
    header = next(h for h in r.headers.get_list("set-cookie") if h.startswith("svc_access="))
    attrs = {a.strip().split("=")[0].lower() for a in header.split(";")[1:]}
    assert {"httponly", "path", "samesite", "max-age"} <= attrs
    assert "domain" not in attrs and "secure" not in attrs  # host-only; http edge
    assert "samesite=lax" in header.lower() and "path=/" in header.lower()
    cookie = set_cookie_value(r)
    assert (await edge.check(site.host, cookie=cookie)).status_code == 204


async def test_authorize_refuses_unknown_hosts_bad_next_and_strangers(svc: Svc) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "org")
    c = alice.client
    url = "/v1/access/authorize"
    err = assert_error(await c.post(url, json={"to": "elsewhere.example.com", "next": "/"}), 404, "unknown_hostname")
    assert err["details"] == {"host": "elsewhere.example.com"}
    for bad_next in ("https://evil.example/", "//evil.example/x", "/\\evil.example", "evil", "/a b", "/x\x01",
                     "javascript:alert(1)", "\\\\evil", "/ok\r\nSet-Cookie: x=1"):
        assert_error(await c.post(url, json={"to": site.host, "next": bad_next}), 400, "bad_request")
    for body in ({}, {"to": site.host}, {"next": "/"}, {"to": "", "next": "/"}, {"to": site.host, "next": ""},
                 {"to": "x" * 254, "next": "/"}, {"to": site.host, "next": "/" + "a" * 2048},
                 {"to": site.host, "next": "/", "extra": 1}, {"to": "bad host", "next": "/"}):
        assert_error(await c.post(url, json=body), 400, "bad_request")
    stranger = await svc.login("mallory")
    err = assert_error(await stranger.client.post(url, json={"to": site.host, "next": "/"}), 403, "forbidden")
    assert "not a member" in err["message"]
    assert_error(await svc.anon.post(url, json={"to": site.host, "next": "/"}), 401, "unauthorized")
    # The host is matched as nginx's $host gives it (case and a port do not matter).
    r = await c.post(url, json={"to": site.host.upper() + ":8081", "next": "/"})
    assert r.status_code == 200 and query_of(r.json()["redirect"])["code"]


async def test_a_code_works_once_only_on_its_host_and_not_after_60_seconds(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    a = await make_site(alice, "site-a")
    b = await make_site(alice, "site-b")
    for site in (a, b):
        await set_mode(alice, site, "org")

    code = query_of(await _authorize(alice, a))["code"]
    assert (await edge.callback(a.host, code)).status_code == 302
    again = await edge.callback(a.host, code)
    assert again.status_code == 400 and "svc_access" not in again.headers.get("set-cookie", "")
    assert "text/html" in again.headers["content-type"] and 'href="/"' in again.text
    assert_error(await edge.callback(a.host, code, accept=JSON), 400, "bad_request")

    # Shown on another host, the code is refused and used up.
    code = query_of(await _authorize(alice, a))["code"]
    assert_error(await edge.callback(b.host, code, accept=JSON), 400, "bad_request")
    assert_error(await edge.callback(a.host, code, accept=JSON), 400, "bad_request")

    code = query_of(await _authorize(alice, a))["code"]
    async with svc.ctx.db.transaction() as session:
        await session.execute(update(AccessGrant).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert_error(await edge.callback(a.host, code, accept=JSON), 400, "bad_request")
    assert_error(await edge.callback(a.host, "made-up-code", accept=JSON), 400, "bad_request")
    assert_error(await edge.callback(a.host, "", accept=JSON), 400, "bad_request")


async def test_a_cookie_for_one_host_is_refused_on_another(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    a = await make_site(alice, "site-a")
    b = await make_site(alice, "site-b")
    for site in (a, b):
        await set_mode(alice, site, "org")
    cookie_a = await _login(edge, alice, a)
    assert (await edge.check(a.host, cookie=cookie_a)).status_code == 204
    assert_error(await edge.check(b.host, cookie=cookie_a), 401)
    # Password cookies are host-bound too.
    await set_mode(alice, a, "password", "password-of-a")
    await set_mode(alice, b, "password", "password-of-a")
    pw_cookie = await edge.sign_in_with_password(a.host, "password-of-a")
    assert (await edge.check(a.host, cookie=pw_cookie)).status_code == 204
    assert_error(await edge.check(b.host, cookie=pw_cookie), 401)
    # An org cookie does not open a password-mode host, nor a password cookie an org-mode one.
    await set_mode(alice, b, "org")
    assert_error(await edge.check(b.host, cookie=pw_cookie), 401)


async def _delete_project(user: User, site: Site) -> None:
    """DELETE the project and wait for its teardown to finish."""
    r = await user.client.request("DELETE", f"/v1/orgs/{site.org}/projects/{site.name}",
                                  json={"confirm": site.name})
    assert r.status_code == 202, r.text
    op = await wait_operation(user, site.org, r.json()["operationId"])
    assert op["terminalCode"] == "ok", op


async def test_a_deleted_projects_cookie_does_not_open_its_successor(svc: Svc, edge: Edge) -> None:
    """Deleted and created again under the same name, a project has the same hostname and starts
    at the same access generation: only the project id in the cookie tells them apart."""
    alice = await svc.login("alice")
    old = await make_site(alice, "site")
    await set_mode(alice, old, "password", "first password")
    cookie = await edge.sign_in_with_password(old.host, "first password")
    assert (await edge.check(old.host, cookie=cookie)).status_code == 204
    await _delete_project(alice, old)
    new = await make_site(alice, "site")
    await set_mode(alice, new, "password", "another password")
    assert new.host == old.host
    claims = cookies.read(svc.ctx.keys, cookie, utcnow())
    async with svc.ctx.db.transaction(write=False) as s:
        generation = await s.scalar(select(Project.access_generation).where(Project.name == "site"))
    assert claims is not None and claims.generation == generation, "same host, same generation"
    assert_error(await edge.check(new.host, cookie=cookie), 401)


async def test_teardown_removes_unused_access_codes(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice, "site")
    await set_mode(alice, site, "org")
    code = query_of(await _authorize(alice, site))["code"]  # issued, never exchanged
    async with svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(AccessGrant)) == 1
    await _delete_project(alice, site)
    async with svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(AccessGrant)) == 0
    # A project of the same name created at once cannot be entered with the old code.
    new = await make_site(alice, "site")
    await set_mode(alice, new, "org")
    assert (await edge.callback(new.host, code)).status_code != 302


async def test_forged_tampered_and_expired_cookies_are_refused(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "org")
    good = await _login(edge, alice, site)
    payload, _, signature = good.partition(".")
    for bad in (good + "x", payload + "." + signature[::-1], payload, "garbage", "a.b", "." + signature):
        assert_error(await edge.check(site.host, cookie=bad), 401)
    claims = cookies.read(svc.ctx.keys, good, utcnow())
    assert claims is not None
    generation = claims.generation
    expired = cookies.issue(svc.ctx.keys, cookies.Claims(project=claims.project, host=site.host, mode="org",
                                                         subject=alice.id,
                                                         generation=generation,
                                                         expires=int(utcnow().timestamp()) - 1))
    assert_error(await edge.check(site.host, cookie=expired), 401)
    # Among several svc_access cookies (a sibling host may plant one), the valid one counts.
    r = await edge.http.get("/v1/edge/check", headers={"x-svc-host": site.host,
                                                       "cookie": f"svc_access=planted; svc_access={good}"})
    assert r.status_code == 204


async def test_org_mode_rechecks_membership_on_every_check(svc: Svc, edge: Edge) -> None:
    alice = await svc.login("alice")
    r = await alice.client.post("/v1/orgs", json={"slug": "acme", "name": "Acme"})
    assert r.status_code == 201
    site = await make_site(alice, "docs", org="acme")
    await set_mode(alice, site, "org")
    bob = await svc.login("bob")
    await add_member(alice, "acme", bob, "viewer")  # viewer or higher may see it
    cookie = await _login(edge, bob, site)
    assert (await edge.check(site.host, cookie=cookie)).status_code == 204
    assert (await alice.client.delete(f"/v1/orgs/acme/members/{bob.id}")).status_code == 204
    r = await edge.check(site.host, cookie=cookie, uri="/")
    assert_error(r, 401)
    assert r.headers["x-svc-login"].startswith("http://svc.test/access/authorize?to=")
    # And the way back in is refused with 403 now.
    assert_error(await bob.client.post("/v1/access/authorize", json={"to": site.host, "next": "/"}), 403)


async def test_no_code_or_cookie_reaches_logs_or_audit(svc: Svc, edge: Edge, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    alice = await svc.login("alice")
    site = await make_site(alice)
    await set_mode(alice, site, "org")
    redirect = await _authorize(alice, site)
    code = query_of(redirect)["code"]
    r = await edge.callback(site.host, code)
    cookie = set_cookie_value(r)
    # svc's own log lines (the test's HTTP client logs the URLs it requests; nginx and uvicorn do
    # not log query strings in svc serve).
    messages = " ".join(rec.getMessage() for rec in caplog.records if rec.name.startswith("svc"))
    assert "access code exchanged" in messages
    assert code not in messages and cookie not in messages and alice.token not in messages
    assert [row.action for row in await audit_rows(svc)] == ["access.set"]
