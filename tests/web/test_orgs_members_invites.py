"""Org management in a real browser, with two people (two browser profiles): invite by email and
accept by the mailed link, members and roles (the last admin kept), invites sent again and revoked,
rename, and delete refused while the org holds a project, then done."""

from __future__ import annotations

import asyncio
import email
import email.policy
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import BrowserContext, Page, expect
from sqlalchemy import create_engine, update

from svc.kit.clock import utcnow
from svc.models import Invite
from tests.support.serve import Server
from tests.support.smtp import eventually
from tests.web.conftest import look, sign_in


def data_dir(server: Server) -> Path:
    return server.log.parent / "data"


def mailed_links(server: Server, to: str) -> list[str]:
    """The invite links mailed to `to`: the server has no SMTP server configured, so its mail job
    writes each message as an .eml file under its data dir (svc.adapters.mail.eml)."""
    links = []
    for path in sorted((data_dir(server) / "mail").glob("*.eml")):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        if message["To"] == to:
            body = message.get_body(("plain",))
            assert body is not None
            links += re.findall(r"http://\S+/invites/[A-Za-z0-9_-]+", body.get_content())
    return links


async def mailed(server: Server, to: str, link: str) -> None:
    async def arrived() -> bool:
        return link in await asyncio.to_thread(mailed_links, server, to)

    await eventually(arrived, what=f"the invite mail to {to}")


async def api_token(http: httpx.AsyncClient, subject: str) -> dict[str, str]:
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    return {"authorization": f"Bearer {r.json()['token']}"}


async def new_org(http: httpx.AsyncClient, auth: dict[str, str], slug: str, name: str) -> None:
    r = await http.post("/v1/orgs", json={"slug": slug, "name": name}, headers=auth)
    assert r.status_code == 201, r.text


def confirm_dialogs(page: Page) -> list[str]:
    """Accept every confirm() (htmx's hx-confirm) and keep what it asked."""
    asked: list[str] = []

    async def accept(dialog: Any) -> None:
        asked.append(dialog.message)
        await dialog.accept()

    page.on("dialog", accept)
    return asked


async def invite_by_form(page: Page, address: str, role: str = "member") -> str:
    """Send an invite on the Invites page; returns the link it shows once."""
    await page.get_by_label("Email address").fill(address)
    await page.get_by_label("Role on joining").select_option(role)
    await page.get_by_role("button", name="Send invite").click()
    issued = page.locator(".issued")
    await expect(issued).to_contain_text(f"to {address} queued to be mailed")
    link = (await issued.locator("code").text_content() or "").strip()
    assert re.fullmatch(r"http://\S+/invites/[A-Za-z0-9_-]{43}", link), link
    return link


async def test_an_invite_is_mailed_opened_signed_in_and_accepted_then_roles_change(
        server: Server, contexts: Any) -> None:
    admin_context: BrowserContext = await contexts()
    admin = await sign_in(admin_context, server, "omi-ada")
    asked = confirm_dialogs(admin)
    await admin.get_by_role("link", name="New org").click()
    await admin.get_by_label("Slug").fill("omi-lab")
    await admin.get_by_label("Display name").fill("Omi Lab")
    await admin.get_by_role("button", name="Create org").click()
    await expect(admin).to_have_url(re.compile(r"/orgs/omi-lab/projects$"))

    # The admin invites an address: the link is shown once and the same link goes out by mail.
    await admin.get_by_role("link", name="Invites").click()
    await expect(admin.get_by_role("heading", name="Invites", exact=True)).to_be_visible()
    await expect(admin.get_by_text("No invites are waiting.")).to_be_visible()
    link = await invite_by_form(admin, "omi-bob@example.com", "member")
    await expect(admin.get_by_role("row", name=re.compile("omi-bob@example.com"))).to_contain_text("waiting")
    await mailed(server, "omi-bob@example.com", link)

    # The second person opens the mailed link: the invite, without signing in.
    bob_context: BrowserContext = await contexts()
    bob = await bob_context.new_page()
    await bob.goto(link)
    await expect(bob.get_by_role("heading", level=1)).to_have_text("Join Omi Lab (omi-lab)")
    main = bob.get_by_role("main")
    await expect(main).to_contain_text("as member")
    await expect(main).to_contain_text(re.compile(
        r"expires in 7 days, on [A-Z][a-z]+day \d{1,2} [A-Z][a-z]+ \d{4}, \d\d:\d\d UTC"))
    await bob.get_by_role("button", name="Sign in to accept").click()
    await bob.get_by_label("Your name").fill("omi-bob")
    await bob.get_by_role("button", name="Sign in").click()
    await expect(bob).to_have_url(link)
    await expect(main).to_contain_text("Signed in as omi-bob.")
    await look(bob, "invite-accept")
    await bob.get_by_role("button", name="Accept the invite").click()
    await expect(bob).to_have_url(re.compile(r"/orgs/omi-lab/projects$"))
    await expect(bob.get_by_role("status")).to_have_text("You joined Omi Lab as member.")
    # Used: the link says so.
    await bob.goto(link)
    await expect(bob.get_by_role("main")).to_contain_text("This invite has already been accepted.")

    # Both see each other in the members list; only the admin gets controls.
    await admin.get_by_role("link", name="Members").click()
    bob_row = admin.get_by_role("row", name=re.compile("omi-bob"))
    await expect(bob_row.get_by_label("Role of omi-bob", exact=True)).to_have_value("member")
    await expect(admin.get_by_role("row", name=re.compile("omi-ada"))).to_contain_text("you")
    await bob.goto(f"{server.api}/orgs/omi-lab/members")
    await expect(bob.get_by_role("row", name=re.compile("omi-ada"))).to_contain_text("admin")
    await expect(bob.get_by_role("button", name=re.compile("Save"))).to_have_count(0)

    # The admin makes bob a viewer: bob then sees no list (as the API), and no admin pages.
    await bob_row.get_by_label("Role of omi-bob", exact=True).select_option("viewer")
    await admin.get_by_role("button", name="Save the role of omi-bob").click()
    await expect(admin.get_by_role("status")).to_have_text("omi-bob is now viewer.")
    await expect(bob_row.get_by_label("Role of omi-bob", exact=True)).to_have_value("viewer")
    await bob.reload()
    await expect(bob.get_by_text("Viewers do not see the member list")).to_be_visible()
    await bob.goto(f"{server.api}/orgs/omi-lab/settings")
    await expect(bob.get_by_text("Only an admin of the org can rename or delete it.")).to_be_visible()
    response = await bob.goto(f"{server.api}/orgs/omi-lab/invites")
    assert response is not None and response.status == 403
    await expect(bob.get_by_role("main")).to_contain_text("This needs the admin role or higher; you are viewer")

    # The last admin can neither step down nor leave: said in words, in place.
    ada_row = admin.get_by_role("row", name=re.compile("omi-ada"))
    await ada_row.get_by_label("Role of omi-ada", exact=True).select_option("member")
    await admin.get_by_role("button", name="Save the role of omi-ada").click()
    alert = ada_row.get_by_role("alert")
    await expect(alert).to_contain_text("The org's last admin cannot be demoted, removed or leave")
    await expect(alert).to_contain_text("Make another member an admin first.")
    await look(admin, "members-last-admin")
    await admin.reload()
    await expect(admin.get_by_text("You are its only admin")).to_be_visible()
    await admin.get_by_role("button", name="Leave this org").click()
    await expect(admin.get_by_role("alert")).to_contain_text("The org's last admin cannot be demoted")
    assert asked == ["Leave Omi Lab?"]

    # The admin removes bob (after a confirmation); bob's view of the org is gone.
    await admin.get_by_role("button", name="Remove omi-bob").click()
    await expect(admin.get_by_role("status")).to_have_text("omi-bob is no longer a member of Omi Lab.")
    assert asked[-1].startswith("Remove omi-bob from Omi Lab?")
    await expect(admin.get_by_role("row", name=re.compile("omi-bob"))).to_have_count(0)
    response = await bob.goto(f"{server.api}/orgs/omi-lab/members")
    assert response is not None and response.status == 404
    await expect(bob.get_by_text("No such org")).to_be_visible()


async def test_an_admin_adds_a_known_account_who_then_leaves(server: Server, contexts: Any, http: Any) -> None:
    auth = await api_token(http, "oma-kay")
    await new_org(http, auth, "oma-crew", "Oma Crew")
    await api_token(http, "oma-lee")  # lee has signed in before
    admin = await sign_in(await contexts(), server, "oma-kay", next_path="/orgs/oma-crew/members")
    await admin.get_by_label("Their user name there").fill("nobody-here")
    await admin.get_by_role("button", name="Add member").click()
    await expect(admin.get_by_role("alert")).to_contain_text("No user with that provider and subject has logged in")
    await admin.get_by_label("Their user name there").fill("oma-lee")
    await admin.get_by_label("Role", exact=True).select_option("admin")
    await admin.get_by_role("button", name="Add member").click()
    await expect(admin.get_by_role("status")).to_have_text("oma-lee is now in Oma Crew as admin.")
    await expect(admin.get_by_role("row", name=re.compile("oma-lee")).get_by_label(
        "Role of oma-lee", exact=True)).to_have_value("admin")
    await admin.get_by_label("Their user name there").fill("oma-lee")
    await admin.get_by_role("button", name="Add member").click()
    await expect(admin.get_by_role("alert")).to_contain_text("Already a member of this org")

    # lee leaves (there is another admin now), and lands on their own org.
    lee = await sign_in(await contexts(), server, "oma-lee", next_path="/orgs/oma-crew/members")
    asked = confirm_dialogs(lee)
    await lee.get_by_role("button", name="Leave this org").click()
    await expect(lee).to_have_url(re.compile(r"/orgs/oma-lee/projects$"))
    await expect(lee.get_by_role("status")).to_have_text("You left Oma Crew.")
    assert asked == ["Leave Oma Crew?"]
    await expect(lee.get_by_label("Switch org").locator("option")).to_have_count(1)

    # A personal org has one member: nothing to add, nobody to leave.
    await lee.goto(f"{server.api}/orgs/oma-lee/members")
    await expect(lee.get_by_text("This is your personal org")).to_be_visible()
    await expect(lee.get_by_role("button", name="Leave this org")).to_have_count(0)


async def test_invites_are_sent_again_revoked_and_expired_ones_listed(server: Server, contexts: Any,
                                                                      http: Any) -> None:
    auth = await api_token(http, "oin-max")
    await new_org(http, auth, "oin-hall", "Oin Hall")
    admin = await sign_in(await contexts(), server, "oin-max", next_path="/orgs/oin-hall/invites")
    asked = confirm_dialogs(admin)
    first = await invite_by_form(admin, "oin-one@example.com", "viewer")
    await invite_by_form(admin, "oin-two@example.com")
    await expect(admin.locator("#invite-lists tbody tr")).to_have_count(2)
    await mailed(server, "oin-one@example.com", first)

    async def recorded() -> bool:  # the mail job records the sending just after the file is written
        r = await http.get("/v1/orgs/oin-hall/invites", headers=auth)
        return all(i["sentAt"] for i in r.json()["invites"] if i["email"] == "oin-one@example.com")

    await eventually(recorded, what="the invite's sentAt")
    await admin.reload()  # mailed: the list says when
    await expect(admin.get_by_role("row", name=re.compile("oin-one@example.com"))).not_to_contain_text("queued")

    # A bad address is refused in words, and what was typed stays.
    await admin.get_by_label("Email address").fill("not-an-address@")
    await admin.get_by_label("Email address").evaluate("e => e.type = 'text'")  # past the browser's own check
    await admin.get_by_role("button", name="Send invite").click()
    await expect(admin.get_by_role("alert")).to_contain_text("must be an email address")
    await expect(admin.get_by_label("Email address")).to_have_value("not-an-address@")

    # Send again: a new link goes out, and the first one stops working.
    await admin.get_by_role("button", name="Send the invite to oin-one@example.com again").click()
    await expect(admin.get_by_role("status")).to_contain_text(
        "A new invite to oin-one@example.com is queued to be mailed; it expires in 7 days.")

    async def resent() -> bool:
        return len(await asyncio.to_thread(mailed_links, server, "oin-one@example.com")) == 2

    await eventually(resent, what="the second invite mail")
    newer = [x for x in mailed_links(server, "oin-one@example.com") if x != first]
    assert len(newer) == 1
    other = await (await contexts()).new_page()
    response = await other.goto(first)
    assert response is not None and response.status == 404
    await expect(other.get_by_role("main")).to_contain_text("This invite link is not valid")
    await other.goto(newer[0])
    await expect(other.get_by_role("heading", level=1)).to_have_text("Join Oin Hall (oin-hall)")
    await expect(other.get_by_role("main")).to_contain_text("as viewer")

    # Revoke: after a confirmation, the row goes and its link says it was withdrawn.
    await admin.get_by_role("button", name="Revoke the invite to oin-one@example.com").click()
    await expect(admin.get_by_role("status")).to_have_text(
        "The invite to oin-one@example.com was revoked: its link no longer works.")
    assert asked == ["Revoke the invite to oin-one@example.com? Its link stops working."]
    await expect(admin.locator("#invite-lists tbody tr")).to_have_count(1)
    await other.reload()
    await expect(other.get_by_role("main")).to_contain_text("This invite was withdrawn.")

    # An invite past its week is listed as expired, with the same two actions; its link says so.
    await eventually(lambda: _has(server, "oin-two@example.com"), what="the second address's mail")
    two = mailed_links(server, "oin-two@example.com")
    await asyncio.to_thread(_expire, server, "oin-two@example.com")
    await admin.reload()
    await expect(admin.get_by_role("heading", name="Expired")).to_be_visible()
    await expect(admin.get_by_role("row", name=re.compile("oin-two@example.com"))).to_contain_text("expired")
    await look(admin, "invites-expired")
    await other.goto(two[0])
    await expect(other.get_by_role("main")).to_contain_text("This invite has expired.")
    await expect(other.get_by_role("main")).to_contain_text(re.compile(r"It expired less than a minute ago, on "))


async def _has(server: Server, to: str) -> bool:
    return bool(await asyncio.to_thread(mailed_links, server, to))


def _expire(server: Server, address: str) -> None:
    """As if the invite's week had passed: straight in the server's SQLite store."""
    engine = create_engine(f"sqlite:///{data_dir(server) / 'svc.sqlite3'}")
    try:
        with engine.begin() as connection:
            connection.execute(update(Invite).where(Invite.email == address)
                               .values(expires_at=utcnow() - timedelta(seconds=5)))
    finally:
        engine.dispose()


async def test_an_org_is_renamed_and_deleted_once_it_holds_nothing(server: Server, contexts: Any,
                                                                 http: Any) -> None:
    auth = await api_token(http, "ose-pat")
    await new_org(http, auth, "ose-works", "Ose Works")
    r = await http.post("/v1/orgs/ose-works/projects", json={"name": "site"}, headers=auth)
    assert r.status_code == 201, r.text
    admin = await sign_in(await contexts(), server, "ose-pat", next_path="/orgs/ose-works/projects")
    await admin.get_by_role("link", name="Org settings").click()
    await expect(admin.get_by_role("heading", name="Org settings")).to_be_visible()

    await admin.get_by_label("Display name").fill("Ose Studio")
    await admin.get_by_role("button", name="Rename").click()
    await expect(admin.get_by_role("status")).to_have_text("Renamed: Ose Works is now called Ose Studio.")
    await expect(admin.get_by_label("Switch org").locator("option:checked")).to_have_text("Ose Studio (ose-works)")
    await admin.get_by_label("Display name").fill("   ")
    await admin.get_by_role("button", name="Rename").click()
    await expect(admin.get_by_role("form", name="Rename the org").get_by_role("alert")).to_contain_text(
        "name must not be empty or only whitespace")

    # Delete: the button waits for the slug; the org still holds a project, listed by name.
    delete = admin.get_by_role("button", name="Delete ose-works")
    await expect(delete).to_be_disabled()
    await admin.get_by_label("Type ose-works to confirm").fill("ose-works")
    await expect(delete).to_be_enabled()
    await delete.click()
    alert = admin.get_by_role("form", name="Delete the org").get_by_role("alert")
    await expect(alert).to_contain_text("The org still holds projects")
    await expect(alert).to_contain_text("Delete what the org still holds first; it is listed below.")
    await expect(alert.locator(".holdings li")).to_have_text("Projects: 1 (site)")
    await look(admin, "org-delete-refused")

    # The project goes (through the API, its teardown waited for); then the org can go.
    r = await http.request("DELETE", "/v1/orgs/ose-works/projects/site", json={"confirm": "site"}, headers=auth)
    assert r.status_code == 202, r.text
    op_id = r.json()["operationId"]

    async def torn_down() -> bool:
        op = (await http.get(f"/v1/orgs/ose-works/operations/{op_id}", headers=auth)).json()
        return op.get("finishedAt") is not None

    await eventually(torn_down, what="the project's teardown")
    await admin.reload()
    await admin.get_by_label("Type ose-works to confirm").fill("ose-works")
    await admin.get_by_role("button", name="Delete ose-works").click()
    await expect(admin).to_have_url(re.compile(r"/orgs/ose-pat/projects$"))
    await expect(admin.get_by_role("status")).to_have_text("The org Ose Studio (ose-works) was deleted.")
    await expect(admin.get_by_label("Switch org").locator("option")).to_have_count(1)
    assert (await http.get("/v1/orgs/ose-works/members", headers=auth)).status_code == 404

    # A personal org cannot be deleted: said instead of the form.
    await admin.get_by_role("link", name="Org settings").click()
    await expect(admin.get_by_text("This is your personal org: it cannot be deleted.")).to_be_visible()
    await expect(admin.get_by_role("button", name=re.compile("Delete"))).to_have_count(0)
