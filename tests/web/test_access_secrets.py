"""The project's Access and Secrets pages in a real browser, against the real edge (nginx): the
password policy set in the dashboard guards the live site, public opens it again, a bypass token is
shown once and passes the edge until it is revoked; secrets are set, versioned and deleted with
their values never on a page; a bad name is refused in words; a viewer sees the mode read-only."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import httpx
from playwright.async_api import Dialog, Page, expect

from tests.support.bundles import site as bundle
from tests.support.serve import Server
from tests.web.conftest import look, sign_in

SITE_HTML = b"<!doctype html><title>Guarded</title><h1 id='guarded'>The guarded page</h1>\n"
PASSWORD = "dashboard pass 42"




@dataclass
class Site:
    owner: str
    org: str
    token: str
    host: str
    url: str

    @property
    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    @property
    def page(self) -> str:
        return f"/orgs/{self.org}/projects/site"


async def _project(server: Server, http: httpx.AsyncClient, owner: str, *, deploy: bool,
                   org: str | None = None) -> Site:
    """A project "site" in `org` (made for the purpose) or else `owner`'s personal org, made
    through the API with a dev token."""
    r = await http.post("/v1/auth/dev/login", json={"subject": owner})
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    auth = {"authorization": f"Bearer {token}"}
    if org is not None:
        r = await http.post("/v1/orgs", json={"slug": org}, headers=auth)
        assert r.status_code == 201, r.text
    org = org or owner
    r = await http.post(f"/v1/orgs/{org}/projects", json={"name": "site"}, headers=auth)
    assert r.status_code == 201, r.text
    host = r.json()["hostname"]
    if deploy:
        r = await http.post(f"/v1/orgs/{org}/projects/site/deployments",
                            content=bundle({"assets/index.html": SITE_HTML}),
                            headers={**auth, "content-type": "application/gzip"})
        assert r.status_code == 201, r.text
    return Site(owner=owner, org=org, token=token, host=host, url=server.edge(host))


async def _edge(server: Server, site: Site, bypass: str | None = None) -> httpx.Response:
    """The edge straight at its address with the project's Host (the system resolver may not know
    *.localhost), as CI would call it."""
    headers = {"host": site.host, **({"svc-access-bypass": bypass} if bypass else {})}
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.get(f"http://127.0.0.1:{server.edge_port}/", headers=headers)


async def _accept(dialog: Dialog) -> None:
    await dialog.accept()


async def _dismiss(dialog: Dialog) -> None:
    await dialog.dismiss()


async def _csrf(page: Page) -> str:
    headers = await page.locator("body").get_attribute("hx-headers")
    assert headers
    token: str = json.loads(headers)["X-CSRF-Token"]
    return token


async def test_password_policy_public_and_the_bypass_token(server: Server, contexts, http) -> None:
    site = await _project(server, http, "acc-ada", deploy=True)
    context = await contexts()
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.api)
    page = await sign_in(context, server, site.owner, next_path=site.page + "/access")
    await expect(page.get_by_role("heading", name="site: access")).to_be_visible()
    await expect(page.get_by_role("link", name="Access", exact=True)).to_have_attribute("aria-current", "page")
    await expect(page.locator(".access-mode")).to_contain_text("Anyone with the address can open the site.")
    await expect(page.get_by_role("group", name="Change who can open the site")).to_be_visible()
    await expect(page.locator("#access-password")).to_be_hidden()  # the field belongs to the password mode

    # Password mode needs a password the first time: refused in words, in place.
    await page.get_by_role("radio", name="Password").check()
    await expect(page.locator("#access-password")).to_be_visible()
    await expect(page.get_by_text("No password is set yet")).to_be_visible()
    await page.get_by_role("button", name="Save access").click()
    await expect(page.get_by_role("alert")).to_contain_text("needs a password the first time")
    r = await http.get(f"/v1{site.page}/access", headers=site.auth)
    assert r.json()["mode"] == "public"
    await page.locator("#access-password").fill(PASSWORD)
    await page.get_by_role("button", name="Save access").click()
    await expect(page.get_by_role("status").first).to_have_text(re.compile("Access set to password"))
    await expect(page.locator(".access-mode")).to_contain_text("enters the project's password")
    await expect(page.get_by_text("leave empty to keep the current password")).to_be_visible()

    # The live site asks for the password: a wrong one is refused, the right one opens it.
    visitor = await (await contexts()).new_page()
    await visitor.goto(site.url + "/")
    await expect(visitor).to_have_url(f"{site.url}/__svc/password?next=/")
    await visitor.fill("#password", "not the password")
    await visitor.click("button[type=submit]")
    await expect(visitor.get_by_role("alert")).to_have_text("Wrong password")
    assert await visitor.locator("#guarded").count() == 0
    await visitor.fill("#password", PASSWORD)
    await visitor.click("button[type=submit]")
    await expect(visitor.locator("#guarded")).to_have_text("The guarded page")

    # Public: a fresh browser opens the site without a question.
    await page.get_by_role("radio", name="Public").check()
    await page.get_by_role("button", name="Save access").click()
    await expect(page.get_by_role("status").first).to_have_text(re.compile("Access set to public"))
    fresh = await (await contexts()).new_page()
    await fresh.goto(site.url + "/")
    await expect(fresh.locator("#guarded")).to_have_text("The guarded page")
    assert fresh.url == site.url + "/"

    # Back to password with the field left empty: the stored password stays.
    await page.get_by_role("radio", name="Password").check()
    await page.get_by_role("button", name="Save access").click()
    await expect(page.get_by_role("status").first).to_have_text(re.compile("Access set to password"))
    assert (await _edge(server, site)).status_code == 302

    # A bypass token: shown once, with a copy button, the header and a curl line.
    await expect(page.get_by_text("No bypass token is set.")).to_be_visible()
    await page.get_by_role("button", name="Create a bypass token").click()
    shown = page.locator(".form-result .bypass-secret")
    await expect(shown).to_contain_text("it is not shown again")
    secret = (await shown.locator("code.secret-value").inner_text()).strip()
    assert secret.startswith("svc_byp_")
    await expect(shown.locator("pre")).to_contain_text(f'curl -H "Svc-Access-Bypass: $BYPASS_TOKEN" {site.url}/')
    await expect(page.locator("#bypass-state")).to_contain_text("A bypass token is set")
    await page.get_by_role("button", name="Copy token").click()
    await expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert await page.evaluate("navigator.clipboard.readText()") == secret
    await look(page, "access-bypass-created")
    r = await _edge(server, site, secret)
    assert r.status_code == 200 and r.content == SITE_HTML
    assert (await _edge(server, site, "svc_byp_wrong")).status_code == 302

    # Not on the page again, and not in its flash or its address.
    await page.goto(server.api + site.page + "/access")
    assert secret not in await page.content()
    await expect(page.locator("#bypass-state")).to_contain_text("A bypass token is set")

    # Without htmx (a plain form post) the token is in the whole page of the answer, once.
    r2 = await page.request.post(server.api + site.page + "/access/bypass", form={"csrf": await _csrf(page)})
    assert r2.status == 200
    html = await r2.text()
    newer = re.search(r"svc_byp_[A-Za-z0-9_-]+", html)
    assert newer is not None and newer.group(0) != secret and "<h1>" in html
    assert r2.headers["cache-control"] == "no-store"
    assert (await _edge(server, site, secret)).status_code == 302  # the new token replaced the old
    assert (await _edge(server, site, newer.group(0))).status_code == 200

    # Revoke, after a confirmation: the header no longer passes.
    await page.reload()
    page.once("dialog", _accept)
    await page.get_by_role("button", name="Revoke").click()
    await expect(page.get_by_role("status").first).to_have_text(
        "Bypass token revoked: the Svc-Access-Bypass header no longer passes.")
    await expect(page.get_by_text("No bypass token is set.")).to_be_visible()
    assert (await _edge(server, site, newer.group(0))).status_code == 302
    r = await http.get(f"/v1{site.page}/access", headers=site.auth)
    assert r.json() == {"mode": "password", "hasPassword": True, "hasBypass": False}


async def test_secrets_are_set_versioned_and_deleted_values_never_shown(server: Server, contexts, http) -> None:
    site = await _project(server, http, "sec-ada", deploy=False)
    context = await contexts()
    page = await sign_in(context, server, site.owner, next_path=site.page + "/secrets")
    await expect(page.get_by_role("heading", name="site: secrets")).to_be_visible()
    await expect(page.get_by_text("No secrets yet.")).to_be_visible()

    first, second = "first-value-7f3a9c", "second-value-2b8e1d\nwith a second line"
    await page.get_by_label("Name").fill("STRIPE_KEY")
    await page.get_by_label("Value").fill(first)
    await page.get_by_role("button", name="Set secret").click()
    await expect(page.get_by_role("status").first).to_have_text("Secret STRIPE_KEY set (version 1).")
    row = page.get_by_role("row", name=re.compile("STRIPE_KEY"))
    await expect(row.get_by_role("cell").nth(0)).to_have_text("1")
    assert first not in await page.content()

    await page.get_by_label("Name").fill("STRIPE_KEY")
    await page.get_by_label("Value").fill(second)
    await page.get_by_role("button", name="Set secret").click()
    await expect(page.get_by_role("status").first).to_have_text("Secret STRIPE_KEY set (version 2).")
    await expect(row.get_by_role("cell").nth(0)).to_have_text("2")
    await expect(row).to_contain_text("ago")
    content = await page.content()
    assert first not in content and "second-value-2b8e1d" not in content

    # Bad names are refused in words and change nothing.
    for bad, words in (("api_key", "uppercase letter"), ("DB", "reserved"), ("SVC_TOKEN", "reserved")):
        await page.get_by_label("Name").fill(bad)
        await page.get_by_label("Value").fill("x")
        await page.get_by_role("button", name="Set secret").click()
        await expect(page.get_by_role("alert")).to_contain_text(words)
        await expect(page.get_by_label("Name")).to_have_value(bad)  # what was typed stays
    # The notice of the last change went when the next one was sent: none says "set" above a refusal.
    await expect(page.get_by_text("Secret STRIPE_KEY set")).to_have_count(0)
    await look(page, "secrets-bad-name")
    # On a phone a name stays whole on its line (it would break only where longer than the line).
    await page.set_viewport_size({"width": 375, "height": 812})
    assert await row.locator("th code").evaluate("el => el.getClientRects().length") == 1
    await page.set_viewport_size({"width": 1440, "height": 900})
    r = await http.get(f"/v1{site.page}/secrets", headers=site.auth)
    assert [(s["name"], s["version"]) for s in r.json()["secrets"]] == [("STRIPE_KEY", 2)]

    # Delete asks first: dismissed, nothing happens; accepted, the secret is gone.
    page.once("dialog", _dismiss)
    await page.get_by_role("button", name="Delete STRIPE_KEY").click()
    await expect(row).to_be_visible()
    page.once("dialog", _accept)
    await page.get_by_role("button", name="Delete STRIPE_KEY").click()
    await expect(page.get_by_role("status").first).to_have_text("Secret STRIPE_KEY deleted.")
    await expect(page.get_by_text("No secrets yet.")).to_be_visible()
    r = await http.get(f"/v1{site.page}/secrets", headers=site.auth)
    assert r.json()["secrets"] == []


async def test_a_viewer_sees_the_access_mode_read_only(server: Server, contexts, http) -> None:
    site = await _project(server, http, "acc-owner-v", deploy=False, org="acc-team-v")
    r = await http.put(f"/v1{site.page}/access", json={"mode": "org"}, headers=site.auth)
    assert r.status_code == 200, r.text
    context = await contexts()
    page = await sign_in(context, server, "acc-viewer-v")  # the user exists once they signed in
    r = await http.post(f"/v1/orgs/{site.org}/members", json={"provider": "dev", "subject": "acc-viewer-v",
                                                                 "role": "viewer"}, headers=site.auth)
    assert r.status_code == 201, r.text

    await page.goto(server.api + site.page + "/access")
    await expect(page.locator(".access-mode")).to_contain_text("members of this org")
    await expect(page.get_by_text("Only an admin of the org can change who can open the site.")).to_be_visible()
    assert await page.get_by_role("radio").count() == 0
    assert await page.get_by_role("button", name="Create a bypass token").count() == 0
    # A post all the same (with a valid CSRF token) is refused and changes nothing.
    r2 = await page.request.post(server.api + site.page + "/access", form={"csrf": await _csrf(page), "mode": "public"})
    assert r2.status == 403
    assert (await http.get(f"/v1{site.page}/access", headers=site.auth)).json()["mode"] == "org"

    # Secrets are for members, as in the API.
    response = await page.goto(server.api + site.page + "/secrets")
    assert response is not None and response.status == 403
    await expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
