"""Sign-in, the session cookie, sign-out, CSRF and the error pages, in a real browser."""

from __future__ import annotations

import re

import httpx
from playwright.async_api import expect

from tests.support.serve import Server
from tests.web.conftest import look, sign_in


async def test_dev_sign_in_lands_on_the_personal_orgs_projects(server: Server, contexts) -> None:
    context = await contexts()
    page = await context.new_page()
    await page.goto(server.api + "/")
    await expect(page).to_have_url(re.compile(r"/signin"))
    await look(page, "signin")
    await page.get_by_label("Your name").fill("ada")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page).to_have_url(re.compile(r"/orgs/ada/projects$"))
    await expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    await expect(page.get_by_text("Signed in as")).to_contain_text("ada")
    cookie = next(c for c in await context.cookies() if c["name"] == "svc_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    # svc's own icon: named by every page, and at /favicon.ico for browsers that ask there (the
    # console watch fails a test on a 404 for it); no other site's file.
    icon = await page.locator("link[rel=icon]").get_attribute("href")
    assert icon and icon.startswith("/static/favicon.svg?v=")
    r = await page.request.get(server.api + icon)
    assert r.ok and r.headers["content-type"] == "image/svg+xml"
    r = await page.request.get(server.api + "/favicon.ico")
    assert r.ok and r.headers["content-type"] == "image/x-icon" and (await r.body())[:4] == b"\x00\x00\x01\x00"
    assert "max-age=2592000" in r.headers["cache-control"]


async def test_sign_out_ends_the_session_on_the_server(server: Server, contexts) -> None:
    context = await contexts()
    page = await sign_in(context, server, "grace")
    token = next(c["value"] for c in await context.cookies() if c["name"] == "svc_session")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page).to_have_url(re.compile(r"/signin"))
    await expect(page.get_by_role("status")).to_have_text("You are signed out.")
    async with httpx.AsyncClient(base_url=server.api) as http:  # the token itself no longer works
        r = await http.get("/v1/me", headers={"authorization": f"Bearer {token}"})
        assert r.status_code == 401


async def test_an_ended_session_gets_a_page_that_says_so(server: Server, contexts) -> None:
    context = await contexts()
    page = await sign_in(context, server, "hopper")
    stale = next(c for c in await context.cookies() if c["name"] == "svc_session")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page).to_have_url(re.compile(r"/signin"))
    await context.add_cookies([{**stale}])  # the old cookie, as after an expiry
    response = await page.goto(server.api + "/orgs/hopper/projects")
    assert response is not None and response.status == 401
    await expect(page.get_by_role("heading", name="Your session has ended")).to_be_visible()
    await look(page, "session-ended")
    await page.get_by_role("button", name="Sign in again").click()
    await page.get_by_label("Your name").fill("hopper")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page).to_have_url(re.compile(r"/orgs/hopper/projects$"))  # back where they were


async def test_a_form_post_without_the_csrf_token_is_refused_and_changes_nothing(server: Server, contexts) -> None:
    context = await contexts()
    page = await sign_in(context, server, "mallory-target")
    # A post as another site would make it: the browser's cookie, no token.
    r = await page.request.post(server.api + "/orgs", form={"slug": "made-by-csrf"})
    assert r.status == 403
    assert "could not be checked" in await r.text()
    r = await page.request.post(server.api + "/orgs", form={"slug": "made-by-csrf", "csrf": "forged"})
    assert r.status == 403
    await page.goto(server.api + "/orgs/made-by-csrf/projects")
    await expect(page.get_by_role("heading", name="Not found")).to_be_visible()


async def test_missing_pages_and_refusals_are_pages_in_words(server: Server, contexts, http) -> None:
    context = await contexts()
    page = await sign_in(context, server, "lin")
    response = await page.goto(server.api + "/no/such/page")
    assert response is not None and response.status == 404
    await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    await look(page, "not-found")
    response = await page.goto(server.api + "/orgs/someone-elses/projects")
    assert response is not None and response.status == 404
    await expect(page.get_by_text("No such org")).to_be_visible()
    # The API keeps its envelope; JSON clients asking / get the service facts.
    assert (await http.get("/v1/nothing")).json()["code"] == "not_found"
    assert (await http.get("/", headers={"accept": "application/json"})).json()["service"] == "svc"


async def test_the_org_switcher_moves_between_orgs(server: Server, contexts) -> None:
    context = await contexts()
    page = await sign_in(context, server, "noether")
    await page.get_by_role("link", name="New org").click()
    await page.get_by_label("Slug").fill("algebra")
    await page.get_by_label("Display name").fill("Algebra")
    await look(page, "org-new")
    await page.get_by_role("button", name="Create org").click()
    await expect(page).to_have_url(re.compile(r"/orgs/algebra/projects$"))
    await expect(page.get_by_role("status")).to_contain_text("Org Algebra created")
    # The switcher's Go button is as tall as the select beside it, on a desktop and on a phone.
    for width in (1440, 375):
        await page.set_viewport_size({"width": width, "height": 900})
        select = await page.get_by_label("Switch org").bounding_box()
        go = await page.get_by_role("button", name="Go").bounding_box()
        assert select and go and abs(go["height"] - select["height"]) <= 1 and abs(go["y"] - select["y"]) <= 1
    await page.set_viewport_size({"width": 1440, "height": 900})
    await page.get_by_label("Switch org").select_option("noether")
    await expect(page).to_have_url(re.compile(r"/orgs/noether/projects$"))
    # A refused form keeps what was typed and says why, in place.
    await page.get_by_role("link", name="New org").click()
    await page.get_by_label("Slug").fill("algebra")
    await page.get_by_role("button", name="Create org").click()
    await expect(page.get_by_role("alert")).to_contain_text("taken")
    await expect(page.get_by_label("Slug")).to_have_value("algebra")


async def test_dark_mode_follows_the_system_setting(server: Server, contexts) -> None:
    page = await sign_in(await contexts(color_scheme="dark"), server, "dark-mode")
    background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(x) for x in re.findall(r"\d+", background)[:3])
    assert red + green + blue < 150, background  # a dark page, not the light one
    await look(page, "projects-dark")  # and still readable (contrast checked by axe)


async def test_everything_is_reachable_by_keyboard(server: Server, contexts) -> None:
    """From the top of the page, Tab reaches the skip link, the org switcher, the navigation and the
    create form; Enter submits it."""
    page = await sign_in(await contexts(), server, "keyboard")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    seen: list[str] = []
    for _ in range(40):
        await page.keyboard.press("Tab")
        seen.append(await page.evaluate(
            "document.activeElement.getAttribute('aria-label') || document.activeElement.id || "
            "document.activeElement.textContent.trim()"))
        if seen[-1] == "project-name":
            break
    assert "org-switcher" in seen and "Members" in seen and "Access tokens" in seen, seen
    assert seen[-1] == "project-name", seen
    await page.keyboard.type("typed")
    await page.keyboard.press("Enter")
    await expect(page).to_have_url(re.compile(r"/orgs/keyboard/projects/typed$"))


async def test_on_a_phone_the_navigation_folds_into_a_menu(server: Server, browser) -> None:
    context = await browser.new_context(viewport={"width": 375, "height": 812}, is_mobile=True)
    try:
        page = await sign_in(context, server, "phone")
        members = page.get_by_role("link", name="Members")
        await expect(page.get_by_role("heading", name="Projects")).to_be_in_viewport()  # the page first
        await expect(members).to_be_hidden()
        await page.get_by_text("Menu").click()
        await members.click()
        await expect(page).to_have_url(re.compile(r"/orgs/phone/members$"))
    finally:
        await context.close()
