"""Identity-provider sign-in end to end: svc in-process, the fake GitHub/OIDC provider a real HTTP server
on 127.0.0.1 that svc's adapter reaches over real HTTP. On SQLite; the first test, which makes the user
and the personal org, on PostgreSQL too."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select, update

from svc.adapters.idp import IdpConfigError, build_identity_provider
from svc.adapters.idp.fake import FakeIdp, running_fake_idp
from svc.kit.clock import utcnow
from svc.models import LoginState, Org, User
from svc.settings import Settings
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.idp import APP_CALLBACK, DASHBOARD, IdpEnv, idp_env, idp_settings, landing

SUBJECTS = {"github": "1001", "oidc": "fake-1001"}  # alice: GitHub's numeric id, the issuer's sub


@pytest.fixture
def store() -> str:
    """The provider's side of sign-in does not depend on the store (the first test, which makes
    the user and the personal org, runs on both): on one state store."""
    return "sqlite"


@pytest.fixture(params=["github", "oidc"])
async def env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[IdpEnv]:
    async with idp_env(settings, str(request.param)) as running:
        yield running


@pytest.fixture
async def github(settings: Settings) -> AsyncIterator[IdpEnv]:
    async with idp_env(settings, "github") as running:
        yield running


async def count(svc: Svc, model: type[User] | type[Org] | type[LoginState]) -> int:
    async with svc.ctx.db.transaction(write=False) as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


def assert_private(headers: httpx.Headers) -> None:
    assert headers.get("cache-control") == "no-store"
    assert headers.get("referrer-policy") == "no-referrer"


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
async def test_sign_in_returns_a_session_in_the_fragment_and_the_personal_org_is_made_once(env: IdpEnv) -> None:
    browser = env.browser()
    start = await browser.start(APP_CALLBACK)
    assert start.status_code == 302
    assert_private(start.headers)
    assert start.headers["location"].startswith(env.fake.base_url + "/")
    callback = await browser.authorize(start.headers["location"])
    assert callback.startswith("http://svc.test/v1/auth/" + env.provider + "/callback?")
    first = landing(await browser.callback(callback))
    assert_private(first.response.headers)
    assert first.url == APP_CALLBACK
    assert set(first.fragment) == {"token", "expiresAt", "userId", "subject"}
    assert first.fragment["subject"] == SUBJECTS[env.provider]
    assert first.fragment["expiresAt"].endswith("Z")

    me = await env.svc.client(first.fragment["token"]).get("/v1/me")
    assert me.status_code == 200
    assert me.json()["user"] == {"id": first.fragment["userId"], "provider": env.provider,
                                 "subject": SUBJECTS[env.provider], "email": "alice@example.com",
                                 "name": "Alice Example"}
    personal = [o for o in me.json()["orgs"] if o["personal"]]
    assert len(personal) == 1 and personal[0]["name"] == "Alice Example"

    again = await env.browser().login(APP_CALLBACK)
    assert again.fragment["userId"] == first.fragment["userId"]
    assert again.fragment["token"] != first.fragment["token"]
    orgs = (await env.svc.client(again.fragment["token"]).get("/v1/orgs")).json()["orgs"]
    assert [o["slug"] for o in orgs if o["personal"]] == [personal[0]["slug"]]
    assert await count(env.svc, User) == 1 and await count(env.svc, Org) == 1
    assert await count(env.svc, LoginState) == 0  # both logins used up their state


async def test_users_without_a_usable_email_sign_in_with_email_null(env: IdpEnv) -> None:
    # ghost: no email at all (GitHub /user email null, /user/emails empty; OIDC no email claim).
    # carol: an email the provider has not verified. bob: private but verified (GitHub /user/emails).
    expected = {"ghost": None, "carol": None, "bob": "bob@example.com"}
    for login, email in expected.items():
        result = await env.browser().login(user=login)
        me = (await env.svc.client(result.fragment["token"]).get("/v1/me")).json()
        assert me["user"]["email"] == email, login
        assert [o for o in me["orgs"] if o["personal"]], login
    ghost = (await env.svc.client((await env.browser().login(user="ghost")).fragment["token"]).get("/v1/me")).json()
    assert ghost["user"]["name"] == "ghost"  # GitHub: the login; OIDC: preferred_username


async def test_a_cancelled_sign_in_lands_on_the_client_with_an_error(env: IdpEnv) -> None:
    browser = env.browser()
    callback = await browser.begin(APP_CALLBACK, deny=True)
    result = landing(await browser.callback(callback))
    assert_private(result.response.headers)
    assert result.url == APP_CALLBACK
    assert result.fragment["error"] == "access_denied"
    assert result.fragment["message"]
    assert "token" not in result.fragment
    assert await count(env.svc, User) == 0
    # The raw Location is percent-encoded: a space in the message is %20, never a bare space.
    assert " " not in result.response.headers["location"]


async def test_a_tampered_code_lands_on_the_client_with_an_error(env: IdpEnv) -> None:
    browser = env.browser()
    callback = await browser.begin()
    code = query_of(callback)["code"]
    result = landing(await browser.callback(callback, code=code[:-2] + "zz"))
    assert result.fragment["error"] == "login_failed"
    assert "token" not in result.fragment
    assert await count(env.svc, User) == 0
    # No code at all, with a valid state, is a failure at the client too.
    browser2 = env.browser()
    callback2 = await browser2.begin()
    path = urlsplit(callback2).path
    result2 = landing(await browser2.http.get(path, params={"state": query_of(callback2)["state"]}))
    assert result2.fragment["error"] == "login_failed"


async def test_a_state_works_once(env: IdpEnv) -> None:
    browser = env.browser()
    callback = await browser.begin()
    assert "token" in landing(await browser.callback(callback)).fragment
    replay = await browser.callback(callback)
    assert_error(replay, 400, "bad_request")
    assert_private(replay.headers)
    # A failed sign-in uses its state up as well.
    denied = await browser.begin(deny=True)
    assert landing(await browser.callback(denied)).fragment["error"] == "access_denied"
    assert_error(await browser.callback(denied), 400, "bad_request")


async def test_a_state_is_bound_to_the_redirect_and_verifier_of_its_own_start(env: IdpEnv) -> None:
    browser = env.browser()
    other = f"{DASHBOARD}/signed-in"
    first = await browser.begin(APP_CALLBACK)
    second = await browser.begin(other)
    # The second login's code under the first login's state: PKCE ties the code to its own start.
    mixed = landing(await browser.callback(first, code=query_of(second)["code"]))
    assert mixed.url == APP_CALLBACK and mixed.fragment["error"] == "login_failed"
    # A redirect sent to the callback is ignored: the state's own redirect is used.
    fresh = await browser.begin(other)
    result = landing(await browser.callback(fresh, redirect="http://evil.test/steal"))
    assert result.url == other and "token" in result.fragment
    assert_error(await browser.callback(first), 400, "bad_request")  # the first state is used up


async def test_the_callback_refuses_missing_unknown_and_expired_states(env: IdpEnv) -> None:
    browser = env.browser()
    path = f"/v1/auth/{env.provider}/callback"
    for params in ({}, {"code": "abc"}, {"state": "", "code": "abc"}, {"state": "nope", "code": "abc"},
                   {"state": "x" * 5000, "code": "abc"}, {"state": "nope", "error": "access_denied"}):
        r = await browser.http.get(path, params=params)
        assert_error(r, 400, "bad_request")
    callback = await browser.begin()
    async with env.svc.ctx.db.transaction() as session:
        await session.execute(update(LoginState).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert_error(await browser.callback(callback), 400, "bad_request")
    assert await count(env.svc, User) == 0


async def test_the_callback_must_come_from_the_browser_that_started(env: IdpEnv) -> None:
    browser = env.browser()
    callback = await browser.begin()
    # Someone else's browser (a login CSRF: an attacker's callback link opened by a victim) is refused.
    assert_error(await env.browser().callback(callback), 400, "bad_request")
    # ... which leaves the login to its own browser.
    assert "token" in landing(await browser.callback(callback)).fragment


async def test_redirects_outside_the_allowlist_are_400(github: IdpEnv) -> None:
    browser = github.browser()
    refused = [
        "http://127.0.0.1:8080@evil.com", "http://127.0.0.1:8080@evil.com/cb", "http://localhost:8080@evil.com",
        "http://user:pw@app.test/cb", "http://app.test@evil.com/cb", "http://evil.com/http://app.test/cb",
        "http://localhost:8081", "http://localhost:8080.evil.com/", "https://app.test/cb", "http://app.test:81/cb",
        "javascript:alert(1)//app.test/cb", "ftp://app.test/cb", "//app.test/cb", "app.test/cb", "/cb",
        "http://app.test/cbx", "http://app.test/other", "http://app.test/cb/../admin", "http://app.test/cb/%2e%2e/x",
        "http://app.test\\@evil.com/cb", "http://app.test/cb\\..\\x", "http://app.test/cb\n", "http://app.te st/cb",
        "http://app.test/cb#frag", "http://127.0.0.1.evil.com/", "http://[::1]:5000/", "http://app.test/cb\x00",
        "http://app.test:99999/cb", "http://" + "a" * 2100, "",
    ]
    for redirect in refused:
        r = await browser.start(redirect)
        assert_error(r, 400, "bad_request")
    assert_error(await browser.http.get("/v1/auth/github/start"), 400, "bad_request")  # no redirect at all
    assert await count(github.svc, LoginState) == 0
    allowed = ["http://app.test/cb", "http://app.test/cb/deeper?x=1", "HTTP://APP.TEST/cb", "http://app.test:80/cb",
               "http://localhost:8080", "http://localhost:8080/any/path?q=1",
               # A loopback IP prefix without a port allows every port (RFC 8252 7.3, the svc CLI).
               "http://127.0.0.1:54321/callback/abc", "http://127.0.0.1/x"]
    for redirect in allowed:
        r = await browser.start(redirect)
        assert r.status_code == 302, (redirect, r.text)
    assert await count(github.svc, LoginState) == len(allowed)


async def test_the_path_segment_must_name_the_configured_provider(env: IdpEnv) -> None:
    browser = env.browser()
    other = "oidc" if env.provider == "github" else "github"
    for name in (other, "dev", "GitHub", "x" * 40):
        assert_error(await browser.start(APP_CALLBACK, provider=name), 404, "not_found")
        r = await browser.http.get(f"/v1/auth/{name}/callback", params={"state": "s", "code": "c"})
        assert_error(r, 404, "not_found")
    assert (await env.svc.anon.get("/v1/config")).json()["identityProvider"] == env.provider


async def test_without_a_configured_provider_the_routes_are_404(svc: Svc) -> None:
    for name in ("github", "oidc"):
        r = await svc.anon.get(f"/v1/auth/{name}/start", params={"redirect": "http://svc.test/"})
        assert_error(r, 404, "not_found")
        r = await svc.anon.get(f"/v1/auth/{name}/callback", params={"state": "s", "code": "c"})
        assert_error(r, 404, "not_found")


async def test_tokens_codes_and_secrets_stay_out_of_the_logs(env: IdpEnv, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    browser = env.browser()
    result = await browser.login()
    failed = await browser.begin()
    landing(await browser.callback(failed, code="forged-code"))
    codes = [c for c in env.fake.issued if not c.startswith(("gho_", "fake_at_"))] + ["forged-code"]
    access_tokens = [t for t in env.fake.issued if t.startswith(("gho_", "fake_at_"))]
    assert len(codes) == 3 and len(access_tokens) == 1
    never = [result.fragment["token"], env.fake.client_secret, *access_tokens]
    for record in caplog.records:
        text = record.getMessage()
        for secret in never:
            assert secret not in text, (record.name, text)
        # The test's own browser carries codes in its GETs (the provider's redirect, the callback URL);
        # the HTTP client libraries log those. Everything else, svc's adapter POSTs included, must not.
        browser_traffic = record.name.startswith("httpcore") or (
            record.name == "httpx" and text.startswith("HTTP Request: GET"))
        if not browser_traffic:
            for code in codes:
                assert code not in text, (record.name, text)
    assert any(r.name.startswith("svc.identity") for r in caplog.records)


async def test_the_id_token_is_verified(settings: Settings) -> None:
    async with idp_env(settings, "oidc") as env:
        for tamper in ("nonce", "aud", "iss", "exp", "signature"):
            env.fake.id_token_tamper = tamper
            browser = env.browser()
            result = landing(await browser.callback(await browser.begin()))
            assert result.fragment.get("error") == "login_failed", tamper
        assert await count(env.svc, User) == 0
        env.fake.id_token_tamper = None
        assert "token" in (await env.browser().login()).fragment


async def test_a_wrong_client_secret_fails_at_the_client(settings: Settings) -> None:
    for provider in ("github", "oidc"):
        async with idp_env(settings, provider, idp_client_secret=SecretStr("not-the-secret")) as env:
            browser = env.browser()
            result = landing(await browser.callback(await browser.begin()))
            assert result.fragment["error"] == "login_failed", provider
            assert await count(env.svc, User) == 0


async def test_an_unreachable_provider_lands_on_the_client_as_idp_unavailable(settings: Settings) -> None:
    async with running_fake_idp(FakeIdp()) as fake:
        gone = fake.base_url  # the server stops at the end of this block: nothing listens there afterwards
    for provider in ("github", "oidc"):
        dead = FakeIdp()
        dead.base_url = gone
        configured = idp_settings(settings, dead, provider)
        async with running_svc(configured) as svc:
            browser = svc.client()
            r = await browser.get(f"/v1/auth/{provider}/start", params={"redirect": APP_CALLBACK})
            if provider == "oidc":  # discovery fails at the start
                result = landing(r)
                assert result.fragment["error"] == "idp_unavailable"
                assert await count(svc, LoginState) == 0
                continue
            assert r.status_code == 302
            state = query_of(r.headers["location"])["state"]
            result = landing(await browser.get("/v1/auth/github/callback", params={"state": state, "code": "c"}))
            assert result.url == APP_CALLBACK and result.fragment["error"] == "idp_unavailable"


async def test_the_fake_refuses_unregistered_redirect_uris(settings: Settings) -> None:
    async with idp_env(settings, "github") as env:
        env.fake.redirect_uris = ["http://elsewhere.test/cb"]
        start = await env.browser().start()
        r = await env.browser().idp.get(start.headers["location"])
        assert r.status_code == 400 and "location" not in r.headers


def test_the_factory_builds_the_configured_provider() -> None:
    base = Settings(public_url="http://svc.test")
    assert build_identity_provider(configured(base)) is None
    secret = SecretStr("very-secret-value")
    github = build_identity_provider(configured(base, idp_provider="github", idp_client_id="id",
                                                idp_client_secret=secret))
    assert github is not None and github.name == "github"
    oidc = build_identity_provider(configured(base, idp_provider="oidc", idp_client_id="id", idp_client_secret=secret, idp_issuer="https://issuer.test"))
    assert oidc is not None and oidc.name == "oidc"
    for bad in ({"idp_provider": "oidc", "idp_client_id": "id", "idp_client_secret": secret},
                {"idp_provider": "github", "idp_client_id": "id"},
                {"idp_provider": "gitlab", "idp_client_id": "id", "idp_client_secret": secret}):
        with pytest.raises(IdpConfigError):
            build_identity_provider(configured(base, **bad))
    assert "very-secret-value" not in repr(github) + repr(oidc)
