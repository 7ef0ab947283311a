"""End-user sign-in on a project's host, end to end: a real `svc serve` (edge, workerd, the projects'
databases on a real PostgreSQL cluster) whose three social providers are the fake identity provider
(a real OAuth 2.0 / OpenID Connect server in GitHub's, Google's and Microsoft's shapes), and headless
Chromium. The project's worker answers with the Svc-Auth-User header it was given, so each test sees
what the app sees."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from svc.adapters.database.process import PrivateCluster
from svc.adapters.idp.fake import DEFAULT_USERS, FakeIdp, FakeUser, running_fake_idp
from tests.support import components
from tests.support.browser import WAIT_MS
from tests.support.ports import free_port
from tests.support.projectdb import as_project
from tests.support.serve import Server, svc_serve
from tests.workers.test_serve import worker_bundle

try:
    from playwright.async_api import Browser, Page, expect
except ImportError:  # pragma: no cover - the dev dependencies include it
    pass

pytestmark = [components.WORKERD, components.PLAYWRIGHT, components.CHROMIUM, components.NGINX, components.POSTGRES]

PROVIDERS = ("github", "google", "microsoft")
LOCAL = "127.0.0.1"
# The app: who the edge says is signed in, for every path.
WHOAMI = """
export default {
  async fetch(request) {
    const url = new URL(request.url);
    return Response.json({ path: url.pathname, user: request.headers.get("svc-auth-user") });
  },
};
"""


@dataclass
class Env:
    server: Server
    fake: FakeIdp


@dataclass
class Site:
    env: Env
    http: httpx.AsyncClient
    owner: str
    auth: dict[str, str]
    host: str
    db: dict[str, Any]

    @property
    def base(self) -> str:
        return f"/v1/orgs/{self.owner}/projects/site"

    @property
    def url(self) -> str:
        return self.env.server.edge(self.host)

    def callback(self, provider: str) -> str:
        return f"{self.url}/__svc/auth/callback/{provider}"


@pytest.fixture(scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory, project_cluster: PrivateCluster) -> AsyncIterator[Env]:
    # Mallory claims Alice's address, which her provider has not verified.
    users = (*DEFAULT_USERS, FakeUser("mallory", 1005, "Mallory", "alice@example.com", email_public=False,
                                      email_verified=False))
    async with running_fake_idp(FakeIdp(users=users)) as fake, svc_serve(
            tmp_path_factory.mktemp("signin"), SVC_WORKER_PROCESSES="1", SVC_PROJECT_DB_ENABLED="true",
            SVC_PROJECT_DB_ADMIN_URL=project_cluster.admin_url, SVC_AUTH_FAKE_URL=fake.base_url,
            # A session's end seen at once (the expiry test ends one in the database, not by logout).
            SVC_AUTH_SESSION_CACHE_SECONDS="0") as server:
        yield Env(server=server, fake=fake)


async def make_site(env: Env, owner: str, *, client_id: str, client_secret: str) -> AsyncIterator[Site]:
    """A project with a worker, a database, auth granted with the three providers."""
    async with httpx.AsyncClient(base_url=env.server.api, timeout=30) as http:
        r = await http.post("/v1/auth/dev/login", json={"subject": owner})
        auth = {"authorization": f"Bearer {r.json()['token']}"}
        r = await http.post(f"/v1/orgs/{owner}/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
        s = Site(env=env, http=http, owner=owner, auth=auth, host=r.json()["hostname"], db={})
        r = await http.post(f"{s.base}/deployments", content=worker_bundle("1", source=WHOAMI, assets={}),
                            headers={**auth, "content-type": "application/gzip"})
        assert r.status_code == 201, r.text
        r = await http.post(f"{s.base}/database", headers=auth)
        assert r.status_code == 200, r.text
        s.db = r.json()
        r = await http.post(f"{s.base}/auth", headers=auth)
        assert r.status_code in (200, 201), r.text
        r = await http.patch(f"{s.base}/auth", json={"brandName": "Acme Notes", "brandColor": "#aa3311"},
                             headers=auth)
        assert r.status_code == 200, r.text
        for name in PROVIDERS:
            r = await http.put(f"{s.base}/auth/providers/{name}",
                               json={"clientId": client_id, "clientSecret": client_secret}, headers=auth)
            assert r.status_code == 200, r.text
        yield s


@pytest.fixture
async def site(env: Env, request: pytest.FixtureRequest) -> AsyncIterator[Site]:
    """A project of its own per test, its providers' apps the fake's client."""
    env.fake.redirect_uris = None
    owner = "a" + request.node.name.removeprefix("test_")[:20].replace("_", "-").strip("-")
    async for s in make_site(env, owner, client_id=env.fake.client_id, client_secret=env.fake.client_secret):
        yield s


async def _page(browser: Browser) -> Page:
    context = await browser.new_context()
    context.set_default_timeout(WAIT_MS)
    return await context.new_page()


async def _json_of(page: Page) -> Any:
    return json.loads(await page.locator("body").inner_text())


async def _sign_in(page: Page, site: Site, provider: str, next_path: str = "/whoami") -> dict[str, Any]:
    """The sign-in page, the provider's button, the provider (approves at once), back on the app."""
    await page.goto(f"{site.url}/__svc/auth/?next={next_path}")
    await page.click(f"#signin-{provider}")
    await page.wait_for_url(f"{site.url}{next_path}")
    seen = await _json_of(page)
    assert seen["path"] == next_path
    assert seen["user"] is not None, seen
    user: dict[str, Any] = json.loads(seen["user"])
    return user


async def test_each_provider_signs_in_in_a_browser_and_the_same_email_is_one_user(site: Site, browser: Browser) -> None:
    page = await _page(browser)
    await page.goto(f"{site.url}/__svc/auth/")
    # The project's brand and its three providers, as plain links (no script on the page).
    await expect(page.locator("h1")).to_have_text("Sign in to Acme Notes")
    for provider, title in (("github", "GitHub"), ("google", "Google"), ("microsoft", "Microsoft")):
        await expect(page.locator(f"#signin-{provider}")).to_have_text(f"Continue with {title}")
    assert await page.locator("script").count() == 0
    assert "#aa3311" in await page.content()

    ids = set()
    for provider in PROVIDERS:
        page = await _page(browser)  # a browser of its own each time: nothing carried over
        user = await _sign_in(page, site, provider)
        assert user["email"] == "alice@example.com" and user["emailVerified"] is True
        assert user["name"] == "Alice Example"
        ids.add(user["id"])
        # The app asks who is signed in.
        await page.goto(f"{site.url}/__svc/auth/session")
        session = await _json_of(page)
        assert session["user"]["id"] == user["id"]
        cookies = {c["name"]: c for c in await page.context.cookies()}
        sess = cookies["svc_auth"]
        assert sess["httpOnly"] and sess["sameSite"] == "Lax" and not sess["secure"]  # http under test
        assert sess["domain"] == site.host  # host-only
    # GitHub, Google and Microsoft vouch for the same verified email: one end user.
    assert len(ids) == 1
    rows = await as_project(site.db, "select count(*) from svc_auth.users")
    assert rows == [(1,)]
    rows = await as_project(site.db, "select provider from svc_auth.identities order by provider")
    assert rows == [("github",), ("google",), ("microsoft",)]


async def test_an_unverified_email_is_never_linked(site: Site, browser: Browser) -> None:
    page = await _page(browser)
    alice = await _sign_in(page, site, "github")
    # Mallory's provider has not verified the address she gives, Alice's (the app suggests her
    # account: login_hint): she is a user of her own, with no email.
    page = await _page(browser)
    await page.goto(f"{site.url}/__svc/auth/login/google?next=/whoami&login_hint=mallory")
    await page.wait_for_url(f"{site.url}/whoami")
    mallory = json.loads((await _json_of(page))["user"])
    assert mallory["id"] != alice["id"] and mallory["email"] is None and mallory["emailVerified"] is False
    assert mallory["name"] == "Mallory"


class EdgeBrowser:
    """A cookie jar speaking to the edge, and real HTTP to the fake provider: to replay and tamper."""

    def __init__(self, site: Site) -> None:
        self.site = site
        # (httpx resolves no *.localhost name: the edge's address, and the host in the header.)
        self.edge = httpx.AsyncClient(base_url=f"http://127.0.0.1:{site.env.server.edge_port}", timeout=30,
                                      headers={"host": site.host})
        self.idp = httpx.AsyncClient(timeout=30)

    async def aclose(self) -> None:
        await self.edge.aclose()
        await self.idp.aclose()

    async def begin(self, provider: str = "github") -> str:
        """login + the provider's approval: the callback URL, not visited yet."""
        r = await self.edge.get(f"/__svc/auth/login/{provider}", params={"next": "/whoami"})
        assert r.status_code == 302, r.text
        authorize = r.headers["location"]
        query = parse_qs(urlsplit(authorize).query)
        assert query["redirect_uri"] == [self.site.callback(provider)]
        assert query["code_challenge_method"] == ["S256"] and query["state"][0]
        r = await self.idp.get(authorize)
        assert r.status_code == 302, r.text
        callback: str = r.headers["location"]
        return callback

    async def visit(self, url: str) -> httpx.Response:
        parts = urlsplit(url)
        return await self.edge.get(f"{parts.path}?{parts.query}", headers={"accept": "application/json"})

    async def whoami(self, **headers: str) -> Any:
        r = await self.edge.get("/whoami", headers=headers)
        assert r.status_code == 200, r.text
        return r.json()["user"]


@pytest.fixture
async def edge(site: Site) -> AsyncIterator[EdgeBrowser]:
    b = EdgeBrowser(site)
    try:
        yield b
    finally:
        await b.aclose()


async def test_a_replayed_state_is_refused(edge: EdgeBrowser) -> None:
    callback = await edge.begin()
    flow = edge.edge.cookies.get("svc_auth_flow")
    assert flow
    r = await edge.visit(callback)
    assert r.status_code == 302 and r.headers["location"] == "/whoami", r.text
    # The same callback again: the sign-in's cookie went with the first answer.
    edge.edge.cookies.clear()
    r = await edge.visit(callback)
    assert r.status_code == 400 and r.json()["code"] == "state_invalid"
    # Even with that cookie put back (a stolen one): the code was taken once.
    edge.edge.cookies.set("svc_auth_flow", flow, domain=LOCAL, path="/__svc/auth/callback/")
    r = await edge.visit(callback)
    assert r.status_code == 400 and "svc_auth" not in r.cookies
    assert await edge.whoami() is None


async def test_a_state_from_another_browser_or_provider_is_refused(edge: EdgeBrowser) -> None:
    callback = await edge.begin()
    other = EdgeBrowser(edge.site)
    try:
        r = await other.visit(callback)  # no sign-in was started in this browser
        assert r.status_code == 400 and r.json()["code"] == "state_invalid"
        # The state of one sign-in with another's cookie.
        await other.begin()
        r = await other.visit(callback)
        assert r.status_code == 400 and r.json()["code"] == "state_invalid"
    finally:
        await other.aclose()
    # Sent to another provider's callback: refused too.
    r = await edge.visit(callback.replace("/callback/github", "/callback/google"))
    assert r.status_code == 400 and r.json()["code"] == "state_invalid"


async def test_the_redirect_uri_is_exactly_the_registered_one(edge: EdgeBrowser) -> None:
    site = edge.site
    # Registered exactly: the round trip works.
    site.env.fake.redirect_uris = [site.callback("github")]
    r = await edge.visit(await edge.begin())
    assert r.status_code == 302, r.text
    # An app registered with another callback (https, or another host): the provider refuses the
    # redirect and nobody is signed in.
    fresh = EdgeBrowser(site)
    try:
        site.env.fake.redirect_uris = [site.callback("github").replace("http://", "https://")]
        r = await fresh.edge.get("/__svc/auth/login/github")
        assert r.status_code == 302
        r = await fresh.idp.get(r.headers["location"])
        assert r.status_code == 400 and "redirect_uri" in r.text
        assert await fresh.whoami() is None
    finally:
        await fresh.aclose()


async def test_an_expired_session_is_refused(edge: EdgeBrowser) -> None:
    r = await edge.visit(await edge.begin())
    assert r.status_code == 302
    assert (await edge.edge.get("/__svc/auth/session")).status_code == 200
    await as_project(edge.site.db, "update svc_auth.sessions set expires_at = now() - interval '1 second'")
    # The short-lived user cookie: once it is gone (5 minutes at most), the edge asks the session,
    # which has ended: nobody, for the app and for the worker, and the browser's cookies go.
    edge.edge.cookies.delete("svc_auth_user")
    r = await edge.edge.get("/__svc/auth/session")
    assert r.status_code == 401 and r.json()["code"] == "not_signed_in"
    assert "svc_auth" not in edge.edge.cookies
    assert await edge.whoami() is None


async def test_a_sign_in_clears_the_projects_dead_sessions(edge: EdgeBrowser) -> None:
    """sessionDays sizes the session table: expired and ended sessions leave it at the next sign-in."""
    for _ in range(3):
        assert (await edge.visit(await edge.begin())).status_code == 302
    await as_project(edge.site.db, "update svc_auth.sessions set expires_at = now() - interval '1 second' "
                                   "where id_hash = (select min(id_hash) from svc_auth.sessions)")
    await as_project(edge.site.db, "update svc_auth.sessions set ended_at = now() "
                                   "where id_hash = (select max(id_hash) from svc_auth.sessions)")
    assert (await as_project(edge.site.db, "select count(*) from svc_auth.sessions")) == [(3,)]
    assert (await edge.visit(await edge.begin())).status_code == 302
    live = await as_project(edge.site.db, "select count(*) from svc_auth.sessions "
                                          "where expires_at > now() and ended_at is null")
    assert (await as_project(edge.site.db, "select count(*) from svc_auth.sessions")) == live == [(2,)]
    assert (await edge.edge.get("/__svc/auth/session")).status_code == 200  # the new one lives


async def test_the_user_header_cannot_be_forged(edge: EdgeBrowser) -> None:
    forged = json.dumps({"id": "eu_admin", "email": "admin@example.com"})
    assert await edge.whoami(**{"Svc-Auth-User": forged}) is None
    # A cookie not signed by svc, or signed for another host, is nobody either.
    edge.edge.cookies.set("svc_auth_user", "eyJ2MSI6MX0.bm90LWEtbWFj", domain=LOCAL)
    assert await edge.whoami() is None
    edge.edge.cookies.clear()
    r = await edge.visit(await edge.begin())
    assert r.status_code == 302
    me = json.loads(await edge.whoami(**{"Svc-Auth-User": forged}))
    assert me["email"] == "alice@example.com"
    # The genuine cookie with its MAC changed (and no session to renew it from): nobody.
    value = edge.edge.cookies.get("svc_auth_user")
    assert value
    payload, _, mac = value.partition(".")
    edge.edge.cookies.clear()
    edge.edge.cookies.set("svc_auth_user", payload + "." + mac[::-1], domain=LOCAL)
    assert await edge.whoami() is None
    assert (await edge.edge.get("/__svc/auth/session")).status_code == 401


async def test_logout_ends_the_session_and_the_worker_sees_nobody(edge: EdgeBrowser) -> None:
    r = await edge.visit(await edge.begin())
    assert r.status_code == 302
    assert json.loads(await edge.whoami())["email"] == "alice@example.com"
    r = await edge.edge.post("/__svc/auth/logout", data={"next": "/whoami"})
    assert r.status_code == 303 and r.headers["location"] == "/whoami"
    assert await edge.whoami() is None
    assert (await edge.edge.get("/__svc/auth/session")).status_code == 401
    rows = await as_project(edge.site.db, "select count(*) from svc_auth.sessions where ended_at is not null")
    assert rows == [(1,)]


async def test_revoked_auth_passes_its_paths_to_the_worker(edge: EdgeBrowser) -> None:
    site = edge.site
    r = await edge.edge.get("/__svc/auth/session")
    assert r.status_code == 401  # the auth service answers
    r = await site.http.delete(f"{site.base}/auth", headers=site.auth)
    assert r.status_code == 204, r.text
    r = await edge.edge.get("/__svc/auth/session")
    assert r.status_code == 200 and r.json() == {"path": "/__svc/auth/session", "user": None}
    r = await edge.edge.get("/__svc/auth/login/github")
    assert r.status_code == 200 and r.json()["path"] == "/__svc/auth/login/github"


async def test_svc_serve_runs_the_fake_providers_for_a_newcomer(
        tmp_path_factory: pytest.TempPathFactory, project_cluster: PrivateCluster, browser: Browser) -> None:
    """`make run` (SVC_AUTH_FAKE): svc serve runs the fake itself, and whatever client id and secret
    the newcomer typed are an app there."""
    port = free_port()
    async with svc_serve(tmp_path_factory.mktemp("fake"), SVC_WORKER_PROCESSES="1", SVC_PROJECT_DB_ENABLED="true",
                         SVC_PROJECT_DB_ADMIN_URL=project_cluster.admin_url, SVC_AUTH_FAKE="true",
                         SVC_AUTH_FAKE_PORT=str(port)) as server:
        env = Env(server=server, fake=FakeIdp(base_url=f"http://127.0.0.1:{port}"))
        async for site in make_site(env, "newcomer", client_id="my-app", client_secret="typed-anything"):
            for provider in PROVIDERS:
                user = await _sign_in(await _page(browser), site, provider)
                assert user["email"] == "alice@example.com"


async def test_logout_everywhere_ends_every_session_of_the_user(edge: EdgeBrowser) -> None:
    r = await edge.visit(await edge.begin())
    assert r.status_code == 302
    other = EdgeBrowser(edge.site)
    try:
        r = await other.visit(await other.begin())
        assert r.status_code == 302
        assert json.loads(await other.whoami())["email"] == "alice@example.com"
        r = await edge.edge.post("/__svc/auth/logout", data={"everywhere": "1"})
        assert r.status_code == 204
        # The other browser's short-lived user cookie gone (5 minutes at most): its session has
        # ended too.
        other.edge.cookies.delete("svc_auth_user")
        assert (await other.edge.get("/__svc/auth/session")).status_code == 401
        assert await other.whoami() is None
    finally:
        await other.aclose()
    rows = await as_project(edge.site.db, "select count(*) from svc_auth.sessions where ended_at is null")
    assert rows == [(0,)]


async def test_the_sign_in_page_shows_the_brand_and_only_the_configured_providers(edge: EdgeBrowser) -> None:
    site = edge.site
    logo = "https://cdn.example.com/acme/logo.png"
    r = await site.http.patch(f"{site.base}/auth", json={"logoUrl": logo}, headers=site.auth)
    assert r.status_code == 200, r.text
    r = await site.http.delete(f"{site.base}/auth/providers/microsoft", headers=site.auth)
    assert r.status_code == 204, r.text
    r = await edge.edge.get("/__svc/auth/", headers={"accept": "text/html"})
    assert r.status_code == 200
    assert f'src="{logo}"' in r.text and "Sign in to Acme Notes" in r.text and "#aa3311" in r.text
    assert "signin-github" in r.text and "signin-google" in r.text and "signin-microsoft" not in r.text
    assert "<script" not in r.text
    assert "img-src https://cdn.example.com" in r.headers["content-security-policy"]
    assert r.headers["cache-control"] == "private, no-store"
    r = await edge.edge.get("/__svc/auth/login/microsoft", headers={"accept": "application/json"})
    assert r.status_code == 404 and r.json()["code"] == "unknown_provider"
    assert "svc_auth_flow" not in r.cookies


async def test_a_sign_in_cancelled_at_the_provider_signs_nobody_in(edge: EdgeBrowser) -> None:
    r = await edge.edge.get("/__svc/auth/login/google")
    assert r.status_code == 302
    r = await edge.idp.get(r.headers["location"] + "&fake_action=deny")
    parts = urlsplit(r.headers["location"])
    r = await edge.edge.get(f"{parts.path}?{parts.query}", headers={"accept": "text/html"})
    assert r.status_code == 400 and "Sign-in was cancelled at the provider" in r.text
    assert "svc_auth" not in edge.edge.cookies and await edge.whoami() is None


async def test_one_sites_sign_in_is_nobody_on_another_site(edge: EdgeBrowser, env: Env) -> None:
    """A visitor signed in to one project carries its cookies to another project's host (a hostile
    tenant's site on a sibling host could plant them): nobody there, for the worker and the app."""
    r = await edge.visit(await edge.begin())
    assert r.status_code == 302
    signed = {"svc_auth": edge.edge.cookies.get("svc_auth"), "svc_auth_user": edge.edge.cookies.get("svc_auth_user")}
    async for other in make_site(env, "another-tenant", client_id=env.fake.client_id,
                                 client_secret=env.fake.client_secret):
        there = EdgeBrowser(other)
        try:
            cookie = "; ".join(f"{k}={v}" for k, v in signed.items())
            r = await there.edge.get("/whoami", headers={"cookie": cookie})
            assert r.status_code == 200 and r.json()["user"] is None
            r = await there.edge.get("/__svc/auth/session", headers={"cookie": cookie})
            assert r.status_code == 401
        finally:
            await there.aclose()
