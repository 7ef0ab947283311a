"""The invite link's page (GET /invites/{token}, where the invite mail points): it shows the
invite to anyone holding the link, and a signed-in person accepts it there, in a real browser."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.invites.helpers import invite, org_with_admin
from tests.support.api import Svc, assert_error
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, HAVE_CHROMIUM

HTML = {"accept": "text/html"}


async def test_the_page_shows_a_pending_invite_and_how_to_accept_it(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com", "viewer")
    r = await svc.anon.get(f"/invites/{created['token']}", headers=HTML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "script-src 'nonce-" in r.headers["content-security-policy"]
    assert r.headers["cache-control"] == "no-store" and r.headers["referrer-policy"] == "no-referrer"
    assert "Join Acme Inc (acme)" in r.text and "<strong>viewer</strong>" in r.text
    assert f"svc invites accept http://svc.test/invites/{created['token']}" in r.text
    assert f'"acceptPath": "/v1/invites/{created["token"]}/accept"' in r.text
    assert 'id="accept"' in r.text


async def test_finished_and_unknown_invites_say_so(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    revoke = await alice.client.delete(f"/v1/orgs/acme/invites/{created['id']}")
    assert revoke.status_code == 204
    r = await svc.anon.get(f"/invites/{created['token']}", headers=HTML)
    assert r.status_code == 200 and "This invite was withdrawn." in r.text and 'id="accept"' not in r.text
    for token in ("x" * 43, "not a token", "x" * 129):
        r = await svc.anon.get(f"/invites/{token}", headers=HTML)
        assert r.status_code == 404 and "This invite link is not valid" in r.text
    # A client that asks for JSON gets the Error envelope.
    assert_error(await svc.anon.get("/invites/" + "x" * 43, headers={"accept": "application/json"}), 404)


@pytest.mark.skipif(not HAVE_CHROMIUM, reason="Debian's chromium is not installed (make test installs it)")
async def test_a_person_signs_in_and_accepts_in_a_browser(tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    from tests.cli.conftest import running_server

    with running_server(tmp_path) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            alice = (await c.post("/v1/auth/dev/login", json={"subject": "alice"})).json()
            auth = {"authorization": f"Bearer {alice['token']}"}
            assert (await c.post("/v1/orgs", json={"slug": "acme", "name": "Acme"}, headers=auth)).status_code == 201
            created = (await c.post("/v1/orgs/acme/invites", json={"email": "bob@example.com", "role": "member"},
                                    headers=auth)).json()
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                try:
                    page = await browser.new_page()
                    page.set_default_timeout(20_000)
                    await page.goto(f"{url}/invites/{created['token']}")
                    await expect(page.locator("h1")).to_have_text("Join Acme (acme)")
                    await page.fill("#subject", "bob")
                    await page.click("#dev button[type=submit]")
                    await expect(page.locator("#who")).to_have_text("Signed in as bob.")
                    await page.click("#accept")
                    await expect(page.get_by_role("status")).to_have_text("You joined Acme as member.")
                    # Opened again, the link says it has been used.
                    await page.goto(f"{url}/invites/{created['token']}")
                    await expect(page.locator("main")).to_contain_text("This invite has already been accepted.")
                finally:
                    await browser.close()
            members = (await c.get("/v1/orgs/acme/members", headers=auth)).json()["members"]
            assert {m["user"]["subject"]: m["role"] for m in members} == {"alice": "admin", "bob": "member"}
