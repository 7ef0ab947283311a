"""The Auth tab in a real browser, against a `svc serve` whose projects' databases live on a real
PostgreSQL cluster (as tests/web/test_database.py's). A member opens it before the project has a
database: told to create it first, no grant button; with the database, grants auth and sees every
provider with the callback address to register for the project's host (to copy) and the count of
end users (read from the project's database); a session length out of bounds is refused in words
and changes nothing, then the settings are saved. The admin sets GitHub's OAuth app (the secret
never shown again), removes it and revokes (asked first); a viewer sees it all with nothing to
change, and a change posted all the same is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import httpx
import pytest
from playwright.async_api import BrowserContext, expect

from svc.adapters.database.process import PrivateCluster
from tests.support.serve import Server, svc_serve
from tests.web.conftest import look, sign_in
from tests.web.test_access_secrets import _accept, _csrf, _project
from tests.web.test_database import _join

OWNER, MEMBER, VIEWER, ORG = "auw-owner", "auw-member", "auw-viewer", "auw-team"
SECRET = "gh-oauth-secret-5e1f"


@pytest.fixture(scope="module")
async def auth_server(tmp_path_factory: pytest.TempPathFactory,
                      project_cluster: PrivateCluster) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path_factory.mktemp("auth-dashboard"), SVC_PROJECT_DB_ENABLED="true",
                         SVC_PROJECT_DB_ADMIN_URL=project_cluster.admin_url) as running:
        yield running


async def test_grant_providers_with_callbacks_settings_viewer_and_revoke(
        auth_server: Server, contexts: Callable[..., Awaitable[BrowserContext]]) -> None:
    async with httpx.AsyncClient(base_url=auth_server.api, timeout=30) as http:
        site = await _project(auth_server, http, OWNER, deploy=False, org=ORG)
        member_auth = {"authorization": f"Bearer {await _join(http, ORG, site.auth, MEMBER, 'member')}"}
        await _join(http, ORG, site.auth, VIEWER, "viewer")
        api = f"/v1{site.page}/auth"
        tab = site.page + "/auth"

        # 1. No database yet: said, with what to do; no grant button.
        page = await sign_in(await contexts(also=auth_server), auth_server, MEMBER, next_path=site.page)
        await page.get_by_role("navigation", name="Project").get_by_role("link", name="Auth", exact=True).click()
        await expect(page.get_by_role("heading", name="site: Auth", level=1)).to_be_visible()
        await expect(page.get_by_role("heading", name="Not granted")).to_be_visible()
        await expect(page.locator("#auth-grant")).to_contain_text("svc db create --project site")
        await expect(page.get_by_role("button", name="Grant auth")).to_have_count(0)

        # 2. With the database: granted; every provider with the callback to register for the host.
        creds = (await http.post(f"/v1{site.page}/database", headers=member_auth)).json()
        await page.reload()
        await page.get_by_role("button", name="Grant auth").click()
        await expect(page.get_by_role("status").first).to_contain_text("Auth granted")
        await expect(page.get_by_role("heading", name="Granted", exact=True)).to_be_visible()
        assert (await http.get(api, headers=member_auth)).json()["granted"] is True
        for name in ("github", "google", "microsoft"):
            callback = f"{site.url}/__svc/auth/callback/{name}"
            await expect(page.locator(f"#provider-{name}").get_by_role("button", name="Copy")).to_have_attribute(
                "data-copy", callback)
        await expect(page.locator("#auth-subscribers")).to_contain_text("End users 0")
        await expect(page.get_by_role("button", name="Set GitHub")).to_have_count(0)  # a member: no providers

        # End users signed up (the auth service writes them there): counted from the project's database.
        con = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                    user=creds["user"], password=creds["password"], ssl=False, timeout=10)
        try:
            await con.execute("INSERT INTO svc_auth.users (id, email) VALUES ('u1', 'a@example.com'), ('u2', NULL)")
        finally:
            await con.close()
        await page.reload()
        await expect(page.locator("#auth-subscribers")).to_contain_text("End users 2")

        # 3. Settings: a colour that is not one refused in words (nothing changed), then saved.
        await page.get_by_label("Session length (days, 1 to 365)").fill("14")
        await page.get_by_label("Brand name").fill("Site Shop")
        await page.get_by_label("Brand colour").fill("blue")
        await page.get_by_role("button", name="Save settings").click()
        await expect(page.locator("#auth-settings").get_by_role("alert")).to_contain_text(
            "brandColor must be a colour as # and six hex digits")
        assert (await http.get(api, headers=member_auth)).json()["settings"]["sessionDays"] == 30
        await page.get_by_label("Brand colour").fill("#1D4ED8")
        await page.get_by_role("button", name="Save settings").click()
        await expect(page.get_by_role("status").first).to_contain_text("Settings saved")
        settings = (await http.get(api, headers=member_auth)).json()["settings"]
        assert settings == {"sessionDays": 14, "brandName": "Site Shop", "brandColor": "#1d4ed8", "logoUrl": None}

        # 4. The admin sets GitHub's OAuth app: its client id shown, the secret nowhere.
        admin = await sign_in(await contexts(also=auth_server), auth_server, OWNER, next_path=tab)
        github = admin.locator("#provider-github")
        await github.get_by_label("Client id").fill("Iv1.site")
        await github.get_by_label("Client secret").fill(SECRET)
        await github.get_by_role("button", name="Set GitHub").click()
        await expect(admin.get_by_role("status").first).to_contain_text("GitHub set")
        await expect(admin.locator("#provider-github")).to_contain_text("client id Iv1.site")
        assert SECRET not in await admin.content()
        assert (await http.get(api, headers=member_auth)).json()["providers"] == [
            {"name": "github", "clientId": "Iv1.site"}]
        await look(admin, "auth-project")

        # 5. A viewer sees it all and can change nothing; a change posted all the same is refused.
        viewer = await sign_in(await contexts(also=auth_server), auth_server, VIEWER, next_path=tab)
        await expect(viewer.locator("#provider-github")).to_contain_text("Iv1.site")
        await expect(viewer.locator("#auth-settings")).to_contain_text("14 days")
        await expect(viewer.get_by_role("button")).not_to_contain_text(["Save settings"])
        await expect(viewer.get_by_role("button", name="Revoke auth")).to_have_count(0)
        refused = await viewer.request.post(f"{auth_server.api}{tab}/settings",
                                            form={"sessionDays": "1"}, headers={"X-CSRF-Token": await _csrf(viewer)})
        assert refused.status == 403
        assert (await http.get(api, headers=member_auth)).json()["settings"]["sessionDays"] == 14

        # 6. The admin removes GitHub and revokes (each asked first): the end users are kept.
        admin.on("dialog", _accept)
        await admin.get_by_role("button", name="Remove GitHub").click()
        await expect(admin.get_by_role("status").first).to_contain_text("GitHub removed")
        await expect(admin.locator("#provider-github")).to_contain_text("Not set.")
        await admin.get_by_role("button", name="Revoke auth").click()
        await expect(admin.get_by_role("status").first).to_contain_text("Auth revoked")
        await expect(admin.get_by_role("heading", name="Not granted")).to_be_visible()
        assert (await http.get(api, headers=member_auth)).json()["granted"] is False
