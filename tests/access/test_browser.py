"""Every access mode in a real browser: a real `svc serve` (SQLite, dev login on) with its edge
(nginx) on free ports, a deployed site, and headless Chromium (Debian's) driven by Playwright.

- password: the edge sends the browser to the password page; a wrong password shows an error; the
  right one opens the site.
- org: the edge sends the browser to the authorize page on svc; dev sign-in; back on the site.
  Someone outside the org is told so and stays out.
- the bypass header passes the edge without a browser (what CI does).
Chromium resolves *.localhost to 127.0.0.1, so http://<project>-<org>.localhost:<edge port>/ works."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from tests.support import components
from tests.support.browser import WAIT_MS
from tests.support.bundles import site as bundle
from tests.support.serve import Server, svc_serve

SITE_HTML = b"<!doctype html><title>Members area</title><h1 id='secret'>The members-only page</h1>\n"
PASSWORD = "browser pass 42"

try:
    from playwright.async_api import Browser, Page, async_playwright, expect
except ImportError:  # pragma: no cover - the dev dependencies include it
    async_playwright = None  # type: ignore[assignment]

pytestmark = [
    components.PLAYWRIGHT, components.CHROMIUM, components.NGINX,
]




@dataclass
class World:
    """A user with a deployed project "site" in their personal org."""

    server: Server
    http: httpx.AsyncClient
    owner: str
    token: str
    host: str

    @property
    def access(self) -> str:
        return f"/v1/orgs/{self.owner}/projects/site/access"

    @property
    def site(self) -> str:
        return self.server.edge(self.host)

    @property
    def _auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    async def set_mode(self, mode: str, password: str | None = None) -> None:
        body = {"mode": mode, **({"password": password} if password else {})}
        r = await self.http.put(self.access, json=body, headers=self._auth)
        assert r.status_code == 200, r.text

    async def bypass_secret(self) -> str:
        r = await self.http.post(self.access + "/bypass", headers=self._auth)
        assert r.status_code == 200, r.text
        secret: str = r.json()["secret"]
        return secret


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    """One `svc serve` for the module; each test has its own user and project."""
    async with svc_serve(tmp_path_factory.mktemp("serve")) as running:
        yield running


@pytest.fixture
async def http(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as client:
        yield client


async def deployed_site(server: Server, http: httpx.AsyncClient, owner: str) -> World:
    r = await http.post("/v1/auth/dev/login", json={"subject": owner})
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    auth = {"authorization": f"Bearer {token}"}
    r = await http.post(f"/v1/orgs/{owner}/projects", json={"name": "site"}, headers=auth)
    assert r.status_code == 201, r.text
    host = r.json()["hostname"]
    r = await http.post(f"/v1/orgs/{owner}/projects/site/deployments",
                        content=bundle({"assets/index.html": SITE_HTML}),
                        headers={**auth, "content-type": "application/gzip"})
    assert r.status_code == 201, r.text
    return World(server=server, http=http, owner=owner, token=token, host=host)


async def _new_page(browser: Browser) -> Page:
    context = await browser.new_context()
    context.set_default_timeout(WAIT_MS)
    return await context.new_page()


async def test_password_mode_in_a_browser(server: Server, http: httpx.AsyncClient, browser: Browser) -> None:
    world = await deployed_site(server, http, "pat")
    site = world.site
    # Public first: the site opens straight away.
    page = await _new_page(browser)
    await page.goto(site + "/")
    await expect(page.locator("#secret")).to_have_text("The members-only page")

    await world.set_mode("password", PASSWORD)
    page = await _new_page(browser)
    await page.goto(site + "/")
    assert page.url == f"{site}/__svc/password?next=/"
    await expect(page.locator("h1")).to_have_text("This site is password-protected")
    await page.fill("#password", "not the password")
    await page.click("button[type=submit]")
    await expect(page.get_by_role("alert")).to_have_text("Wrong password")
    assert await page.locator("#secret").count() == 0
    await page.fill("#password", PASSWORD)
    await page.click("button[type=submit]")
    await expect(page.locator("#secret")).to_have_text("The members-only page")
    assert page.url == site + "/"
    # The cookie keeps the browser in; another browser (no cookie) is sent to the form again.
    await page.goto(site + "/index.html")
    await expect(page.locator("#secret")).to_be_visible()
    other = await _new_page(browser)
    await other.goto(site + "/")
    assert "/__svc/password" in other.url
    # A policy change signs everyone out.
    await world.set_mode("password")
    await page.goto(site + "/")
    assert "/__svc/password" in page.url


async def test_org_mode_round_trip_in_a_browser(server: Server, http: httpx.AsyncClient, browser: Browser) -> None:
    world = await deployed_site(server, http, "olga")
    site = world.site
    await world.set_mode("org")
    page = await _new_page(browser)
    await page.goto(site + "/index.html")
    # To svc's authorize page, which sends a browser without a dashboard session to sign in first.
    await page.wait_for_url(lambda url: url.startswith(f"{world.server.api}/signin?next="))
    assert "/access/authorize" in page.url
    await page.get_by_label("Your name").fill("olga")
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(site + "/index.html")
    await expect(page.locator("#secret")).to_have_text("The members-only page")
    # Signed in on svc now (the dashboard's session): another visit goes round without a question.
    await page.context.clear_cookies(domain=world.host)  # the site's cookie, not svc's session
    await page.goto(site + "/")
    await page.wait_for_url(site + "/")
    await expect(page.locator("#secret")).to_be_visible()


async def test_org_mode_refuses_a_non_member_in_a_browser(server: Server, http: httpx.AsyncClient,
                                                           browser: Browser) -> None:
    world = await deployed_site(server, http, "nora")
    site = world.site
    await world.set_mode("org")
    page = await _new_page(browser)
    await page.goto(site + "/")
    await page.get_by_label("Your name").fill("mallory")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_contain_text("you are not a member of it")
    await expect(page.get_by_text("You are signed in as")).to_contain_text("mallory")
    assert page.url.startswith(world.server.api + "/access/authorize")
    await page.goto(site + "/")
    assert page.url.startswith(world.server.api + "/access/authorize")
    assert await page.locator("#secret").count() == 0


async def test_the_bypass_header_passes_the_edge(server: Server, http: httpx.AsyncClient) -> None:
    world = await deployed_site(server, http, "cici")
    site = world.site
    await world.set_mode("password", PASSWORD)
    secret = await world.bypass_secret()
    # Straight to the edge's address with the project's Host (the system resolver may not know *.localhost).
    edge = f"http://127.0.0.1:{world.server.edge_port}/"
    async with httpx.AsyncClient(timeout=10, headers={"host": world.host}) as http:
        r = await http.get(edge)
        assert r.status_code == 302 and r.headers["location"] == f"{site}/__svc/password?next=/"
        r = await http.get(edge, headers={"svc-access-bypass": secret})
        assert r.status_code == 200 and r.content == SITE_HTML
        newer = await world.bypass_secret()
        r = await http.get(edge, headers={"svc-access-bypass": secret})
        assert r.status_code == 302
        r = await http.get(edge, headers={"svc-access-bypass": newer})
        assert r.status_code == 200 and r.content == SITE_HTML
