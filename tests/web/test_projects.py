"""Projects in the dashboard: the list with the plan's limit shown before it is hit, create, the
overview, and delete with a typed confirmation and the teardown's progress live."""

from __future__ import annotations

import re

from playwright.async_api import Route, expect

from tests.support.serve import Server
from tests.web.conftest import look, sign_in


async def test_create_projects_up_to_the_plans_limit(server: Server, contexts) -> None:
    page = await sign_in(await contexts(), server, "curie")
    await expect(page.get_by_text("0 of 3 projects on the free plan")).to_be_visible()
    await expect(page.get_by_text("No projects yet")).to_be_visible()
    for n, name in enumerate(["radium", "polonium", "thorium"], start=1):
        await page.goto(server.api + "/orgs/curie/projects")
        await page.get_by_label("Name").fill(name)
        await page.get_by_role("button", name="Create project").click()
        await expect(page).to_have_url(re.compile(rf"/orgs/curie/projects/{name}$"))
        await expect(page.get_by_role("status")).to_contain_text(f"Project {name} created")
        await expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
        if n == 1:
            await expect(page.get_by_text("Nothing deployed yet")).to_be_visible()
            await look(page, "project-overview-new")
            await page.reload()  # the address is the project's: a reload shows it again
            await expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    await page.goto(server.api + "/orgs/curie/projects")
    rows = page.get_by_role("row")
    await expect(rows).to_have_count(4)  # the header and three projects, by name
    await expect(rows.nth(1)).to_contain_text("polonium-curie.localhost")
    await expect(rows.nth(1)).to_contain_text("nothing deployed yet")
    # The limit is said before it is hit: no form that can only fail.
    await expect(page.get_by_text("This org has used all 3 projects of the free plan")).to_be_visible()
    await expect(page.get_by_role("button", name="Create project")).to_have_count(0)
    await look(page, "projects-list")


async def test_the_browser_stops_a_name_that_cannot_be_one_before_it_is_sent(server: Server, contexts) -> None:
    """The project name and org slug fields' own check works (a pattern Chromium cannot compile, as
    with its v flag, turns the check off and logs an error, which the console watch would catch):
    "Shop Site" is stopped in the page with the browser's message, and never reaches svc."""
    page = await sign_in(await contexts(), server, "hahn")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if request.method == "POST" else None)
    forms = (("/orgs/hahn/projects", "Name", "Create project", "/orgs/hahn/projects/shop-site"),
             ("/orgs/new", "Slug", "Create org", "/orgs/shop-site/projects"))
    for form, label, button, landed in forms:
        await page.goto(server.api + form)
        field = page.get_by_label(label)
        await field.fill("Shop Site")
        await page.get_by_role("button", name=button).click()
        assert await field.evaluate("el => el.validity.patternMismatch")
        assert await field.evaluate("el => el.validationMessage")  # the browser says why, at the field
        await expect(page).to_have_url(server.api + form)
        await field.fill("shop-site")
        await page.get_by_role("button", name=button).click()
        await expect(page).to_have_url(server.api + landed)
    assert [url.removeprefix(server.api) for url in sent] == ["/orgs/hahn/projects", "/orgs"]  # the good names only


async def test_without_script_create_lands_on_the_project(server: Server, contexts) -> None:
    """A plain form post (no htmx) is answered with a 303 to the project: the address follows too."""
    page = await sign_in(await contexts(java_script_enabled=False), server, "rutherford")
    await page.get_by_label("Name").fill("nucleus")
    await page.get_by_role("button", name="Create project").click()
    await expect(page).to_have_url(re.compile(r"/orgs/rutherford/projects/nucleus$"))
    await expect(page.get_by_role("status")).to_contain_text("Project nucleus created")
    await page.reload()
    await expect(page.get_by_role("heading", name="nucleus", exact=True)).to_be_visible()


async def test_the_address_follows_when_htmx_is_answered_with_the_plain_posts_303(server: Server, contexts) -> None:
    """Behind a proxy that drops htmx's HX-Request header, svc answers the create as a plain post (a
    303), which the browser follows unseen: the page goes to the project rather than showing it
    inside the list's form with the list's address left (a reload then showed the list)."""
    page = await sign_in(await contexts(), server, "chadwick")

    async def without_hx_request(route: Route) -> None:
        await route.continue_(headers={k: v for k, v in route.request.headers.items() if k.lower() != "hx-request"})

    await page.route("**/orgs/chadwick/projects", without_hx_request)
    await page.get_by_label("Name").fill("neutron")
    await page.get_by_role("button", name="Create project").click()
    await expect(page).to_have_url(re.compile(r"/orgs/chadwick/projects/neutron$"))
    await expect(page.get_by_role("heading", level=1)).to_have_text("neutron")  # one page, not two
    await page.reload()
    await expect(page.get_by_role("heading", level=1)).to_have_text("neutron")


async def test_a_refused_name_is_said_in_words_and_nothing_is_created(server: Server, contexts, http) -> None:
    page = await sign_in(await contexts(), server, "meitner")
    name = page.get_by_label("Name")
    await name.fill("Bad_Name")
    # The browser's own pattern check would stop the form: a script could still send it.
    await name.evaluate("el => el.removeAttribute('pattern')")
    await page.get_by_role("button", name="Create project").click()
    await expect(page.get_by_role("alert")).to_contain_text("name")
    await expect(name).to_have_value("Bad_Name")
    token = (await http.post("/v1/auth/dev/login", json={"subject": "meitner"})).json()["token"]
    listed = await http.get("/v1/orgs/meitner/projects", headers={"authorization": f"Bearer {token}"})
    assert listed.json()["projects"] == []


async def test_delete_with_typed_confirmation_and_live_progress(server: Server, contexts, http) -> None:
    page = await sign_in(await contexts(), server, "fermi")
    await page.get_by_label("Name").fill("pile")
    await page.get_by_role("button", name="Create project").click()
    await expect(page).to_have_url(re.compile(r"/projects/pile$"))
    await page.get_by_role("navigation", name="Project").get_by_role("link", name="Settings").click()
    button = page.get_by_role("button", name="Delete pile")
    await expect(button).to_be_disabled()  # until the name is typed
    await page.get_by_label("Type pile to confirm").fill("pil")
    await expect(button).to_be_disabled()
    await page.get_by_label("Type pile to confirm").fill("pile")
    await expect(button).to_be_enabled()
    await look(page, "project-settings")
    await button.click()
    await expect(page).to_have_url(re.compile(r"/orgs/fermi/operations/op_"))
    await expect(page.get_by_role("heading", name="Deleting pile")).to_be_visible()
    # The page follows the teardown by itself, without a reload, until it is done.
    await expect(page.get_by_role("status")).to_contain_text("the project is gone")
    await look(page, "project-deleted")
    await page.get_by_role("link", name="Back to projects").click()
    await expect(page.get_by_text("No projects yet")).to_be_visible()


async def test_a_viewer_sees_projects_but_no_create_or_delete(server: Server, contexts, http) -> None:
    owner = (await http.post("/v1/auth/dev/login", json={"subject": "bohr"})).json()["token"]
    auth = {"authorization": f"Bearer {owner}"}
    assert (await http.post("/v1/orgs", json={"slug": "copenhagen"}, headers=auth)).status_code == 201
    assert (await http.post("/v1/orgs/copenhagen/projects", json={"name": "atom"}, headers=auth)).status_code == 201
    await http.post("/v1/auth/dev/login", json={"subject": "heisenberg"})
    r = await http.post("/v1/orgs/copenhagen/members",
                        json={"provider": "dev", "subject": "heisenberg", "role": "viewer"}, headers=auth)
    assert r.status_code == 201, r.text
    page = await sign_in(await contexts(), server, "heisenberg", next_path="/orgs/copenhagen/projects")
    await expect(page.get_by_role("link", name="atom", exact=True)).to_be_visible()
    await expect(page.get_by_role("button", name="Create project")).to_have_count(0)
    await page.goto(server.api + "/orgs/copenhagen/projects/atom/settings")
    await expect(page.get_by_text("Only an admin of the org can delete a project")).to_be_visible()
    # Posting anyway (with a valid token of the page) is refused in words.
    csrf = await page.locator("body").get_attribute("hx-headers")
    assert csrf
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', csrf)
    assert token
    r = await page.request.post(server.api + "/orgs/copenhagen/projects/atom/delete",
                                form={"confirm": "atom", "csrf": token.group(1)})
    assert r.status == 403 and "admin" in await r.text()
    assert (await http.get("/v1/orgs/copenhagen/projects/atom", headers=auth)).json()["state"] == "active"
