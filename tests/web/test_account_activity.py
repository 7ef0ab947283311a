"""Account pages (access tokens, SSH keys) and org activity pages (notifications, audit log), in a real browser."""

from __future__ import annotations

import re
import uuid

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from playwright.async_api import Dialog, Page, expect

from tests.support.bundles import site as bundle
from tests.support.serve import Server
from tests.web.conftest import look, sign_in


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


async def api_token(http: httpx.AsyncClient, subject: str) -> dict[str, str]:
    """Headers for the API as `subject` (the same user as the browser's dev sign-in)."""
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    return {"authorization": f"Bearer {r.json()['token']}"}


def accept_dialogs(page: Page) -> None:
    """hx-confirm asks with the browser's confirm(): say yes."""
    async def accept(dialog: Dialog) -> None:
        await dialog.accept()

    page.on("dialog", accept)


def public_key(comment: str) -> str:
    key = Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode() + f" {comment}"


async def test_a_token_is_shown_once_works_and_stops_working_when_revoked(server: Server, contexts, http) -> None:
    subject = uniq("tokens")
    page = await sign_in(await contexts(), server, subject)
    accept_dialogs(page)
    await page.get_by_role("link", name="Access tokens").click()
    await expect(page.get_by_role("heading", name="Access tokens", level=1)).to_be_visible()
    await expect(page.get_by_text("No access tokens yet")).to_be_visible()

    await page.get_by_label("Name").fill("ci deploys")
    await page.get_by_label("Expires after").fill("30")
    await page.get_by_role("button", name="Create token").click()
    shown = page.locator(".token-secret")
    await expect(shown).to_contain_text("Copy it now: it is not shown again")
    await expect(shown.get_by_role("button", name="Copy token")).to_be_visible()
    token = (await shown.locator("code.secret-value").inner_text()).strip()
    assert re.fullmatch(r"svc_pat_[A-Za-z0-9]{38}", token), token
    # The list beside the form has the new row at once (out of band), with the hint, not the token.
    row = page.get_by_role("row", name=re.compile("ci deploys"))
    await expect(row).to_contain_text(token[:12] + "…")
    await expect(row).to_contain_text("active")
    await expect(row).to_contain_text("in 30 days")
    await look(page, "account-token-created")

    me = await http.get("/v1/me", headers={"authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json()["user"]["subject"] == subject

    await page.reload()
    await expect(page.get_by_role("row", name=re.compile("ci deploys"))).to_be_visible()
    assert token not in await page.content()  # never again

    # Without script, the form's answer is the whole page with the token in it (and not in the URL).
    csrf = await page.locator("#token-form input[name=csrf]").input_value()
    plain = await page.request.post(server.api + "/account/tokens", form={"csrf": csrf, "name": "no script"})
    assert plain.status == 200 and plain.url == server.api + "/account/tokens"
    text = await plain.text()
    assert "Copy it now: it is not shown again" in text and re.search(r"svc_pat_[A-Za-z0-9]{38}", text)
    assert "<h1>Access tokens</h1>" in text

    # A name the API refuses is refused here in the same words, in place.
    await page.get_by_label("Name").fill("   ")
    await page.get_by_role("button", name="Create token").click()
    await expect(page.get_by_role("alert")).to_contain_text("name must not be empty")

    await page.get_by_role("button", name="Revoke ci deploys").click()
    await expect(page.get_by_role("status")).to_have_text("Token revoked: it stops working at once.")
    row = page.get_by_role("row", name=re.compile("ci deploys"))
    await expect(row).to_contain_text("revoked")
    await expect(row.get_by_role("button")).to_have_count(0)
    r = await http.get("/v1/me", headers={"authorization": f"Bearer {token}"})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"


async def test_ssh_keys_are_added_refused_in_words_and_deleted(server: Server, contexts) -> None:
    page = await sign_in(await contexts(), server, uniq("keys"))
    accept_dialogs(page)
    await page.get_by_role("link", name="SSH keys").click()
    await expect(page.get_by_role("heading", name="SSH keys", level=1)).to_be_visible()
    await expect(page.get_by_text("No SSH keys yet")).to_be_visible()

    # Malformed: refused with what is wrong, and what was typed stays.
    await page.get_by_label("Name").fill("broken")
    await page.get_by_label("Public key").fill("ssh-ed25519 this-is-not-base64!")
    await page.get_by_role("button", name="Add key").click()
    await expect(page.get_by_role("alert")).to_contain_text("not base64")
    await expect(page.get_by_label("Public key")).to_have_value("ssh-ed25519 this-is-not-base64!")
    await page.get_by_label("Public key").fill("-----BEGIN OPENSSH PRIVATE KEY-----")
    await page.get_by_role("button", name="Add key").click()
    await expect(page.get_by_role("alert")).to_contain_text("this is a private key")

    await page.get_by_label("Name").fill("laptop")
    await page.get_by_label("Public key").fill(public_key("me@laptop") + "\n")
    await page.get_by_role("button", name="Add key").click()
    await expect(page.get_by_role("status")).to_contain_text("SSH key laptop added (SHA256:")
    row = page.get_by_role("row", name=re.compile("laptop"))
    await expect(row).to_contain_text("ssh-ed25519")
    await expect(row).to_contain_text("SHA256:")
    await look(page, "account-ssh-keys")

    await page.get_by_role("button", name="Delete laptop").click()
    await expect(page.get_by_role("status")).to_have_text("SSH key deleted.")
    await expect(page.get_by_text("No SSH keys yet")).to_be_visible()


async def test_notifications_show_the_project_limit_reached(server: Server, contexts, http) -> None:
    subject = uniq("notes")
    page = await sign_in(await contexts(), server, subject)
    await page.get_by_role("link", name="Notifications").click()
    await expect(page.get_by_role("heading", name="Notifications", level=1)).to_be_visible()
    await expect(page.get_by_text("No notifications yet")).to_be_visible()

    headers = await api_token(http, subject)
    org = page.url.split("/orgs/")[1].split("/")[0]
    limit = next(o["projectLimit"] for o in (await http.get("/v1/me", headers=headers)).json()["orgs"]
                 if o["slug"] == org)
    for i in range(limit):  # the last one takes the org to its plan's limit: a notification
        r = await http.post(f"/v1/orgs/{org}/projects", json={"name": f"site{i}"}, headers=headers)
        assert r.status_code == 201, r.text
    await page.reload()
    row = page.get_by_role("row", name=re.compile(f"has used all {limit} projects"))
    await expect(row).to_contain_text("limit.projects")
    await look(page, "org-notifications")


async def test_the_audit_log_lists_filters_pages_and_is_for_admins(server: Server, contexts, http) -> None:
    admin, member = uniq("auditor"), uniq("member")
    org = uniq("audit")
    headers = await api_token(http, admin)
    await api_token(http, member)  # has signed in once, so can be added
    assert (await http.post("/v1/orgs", json={"slug": org, "name": "Audit Co"}, headers=headers)).status_code == 201
    base = f"/v1/orgs/{org}"
    assert (await http.post(f"{base}/projects", json={"name": "web"}, headers=headers)).status_code == 201
    # A deployment first: its details hold a digest, one long word that must fit a phone's width.
    r = await http.post(f"{base}/projects/web/deployments", content=bundle({"assets/index.html": b"<h1>hi</h1>"}),
                        headers={**headers, "content-type": "application/gzip"})
    assert r.status_code == 201, r.text
    digest = r.json()["digest"]
    for name in ("API_KEY", "DB_URL", "API_KEY"):
        r = await http.put(f"{base}/projects/web/secrets/{name}", json={"value": "s3cret-value"}, headers=headers)
        assert r.status_code == 200, r.text
    r = await http.post(f"{base}/members", json={"provider": "dev", "subject": member, "role": "member"},
                        headers=headers)
    assert r.status_code == 201, r.text

    page = await sign_in(await contexts(), server, admin, next_path=f"/orgs/{org}/audit")
    await expect(page).to_have_url(re.compile(f"/orgs/{org}/audit$"))
    await expect(page.get_by_role("heading", name="Audit log", level=1)).to_be_visible()
    rows = page.locator("tbody tr")
    await expect(rows).to_have_count(5)
    await expect(rows.last).to_contain_text(digest)
    await expect(rows.first).to_contain_text("member.add")
    await expect(rows.first).to_contain_text(f"dev:{admin}")
    await expect(rows.nth(1)).to_contain_text("web/API_KEY")
    await expect(rows.nth(1)).to_contain_text("version 2")
    assert "s3cret-value" not in await page.content()
    await look(page, "org-audit")

    # Filter by a group of events: only the secrets.
    await page.get_by_label("Event").select_option("secret.")
    await page.get_by_role("button", name="Filter").click()
    await expect(page).to_have_url(re.compile(r"action=secret\.(&|$)"))
    await expect(rows).to_have_count(3)
    for i in range(3):
        await expect(rows.nth(i)).to_contain_text("secret.set")
    await expect(page.locator("tbody").get_by_text("member.add")).to_have_count(0)
    # An actor that did nothing here: none.
    await page.get_by_label("Actor").fill(f"dev:{member}")
    await page.get_by_role("button", name="Filter").click()
    await expect(page.get_by_text("No events match these filters.")).to_be_visible()
    await page.get_by_role("button", name="Show all").click()
    await expect(rows).to_have_count(5)

    # Pages: two at a time, older ones by the cursor, the filter kept.
    await page.goto(f"{server.api}/orgs/{org}/audit?limit=2")
    await expect(rows).to_have_count(2)
    await page.get_by_role("button", name="Older events").click()
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("web/DB_URL")
    await page.get_by_role("button", name="Older events").click()
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("deployment.create")
    await expect(page.get_by_role("button", name="Older events")).to_have_count(0)
    await expect(page.get_by_role("button", name="Newest")).to_be_visible()
    # A filter the API refuses is refused in its words.
    response = await page.goto(f"{server.api}/orgs/{org}/audit?action=NOT%20AN%20EVENT")
    assert response is not None and response.status == 400
    await expect(page.get_by_text("action must be an event name")).to_be_visible()

    # A member (not an admin) is told so, in words; the nav does not offer the page.
    other = await sign_in(await contexts(), server, member, next_path=f"/orgs/{org}/projects")
    await expect(other).to_have_url(re.compile(f"/orgs/{org}/projects$"))
    await expect(other.get_by_role("link", name="Audit log")).to_have_count(0)
    response = await other.goto(f"{server.api}/orgs/{org}/audit")
    assert response is not None and response.status == 403
    await expect(other.get_by_role("heading", name="Not allowed")).to_be_visible()
    await expect(other.get_by_text("This needs the admin role or higher; you are member")).to_be_visible()
    # Notifications are for every member.
    response = await other.goto(f"{server.api}/orgs/{org}/notifications")
    assert response is not None and response.status == 200
