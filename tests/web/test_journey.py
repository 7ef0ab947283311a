"""A newcomer's first hour, every step clicked in the browser (issue 9's walk-through): sign in,
create an org, invite a second person who accepts, create a project, deploy by upload, open the
live URL, roll back, set a password and pass it, set a secret, create and revoke a token, delete
the project."""

from __future__ import annotations

import re

from playwright.async_api import Dialog, Page, expect

from tests.support.bundles import site as bundle
from tests.support.serve import Server
from tests.web.conftest import sign_in

PASSWORD = "journey password 7"


def _bundle(title: str) -> bytes:
    return bundle({"assets/index.html": f"<!doctype html><title>{title}</title><h1>{title}</h1>".encode()})


async def _accept_dialogs(page: Page) -> None:
    async def accept(dialog: Dialog) -> None:
        await dialog.accept()

    page.on("dialog", accept)


async def _site(page: Page, url: str) -> Page:
    site = await page.context.new_page()
    await site.goto(url)
    return site


async def test_a_newcomers_first_hour(server: Server, contexts) -> None:
    ada_context = await contexts()
    ada = await sign_in(ada_context, server, "ada-journey")
    await _accept_dialogs(ada)

    # An org of her own to work with others.
    await ada.get_by_role("link", name="New org").click()
    await ada.get_by_label("Slug").fill("journey")
    await ada.get_by_role("button", name="Create org").click()
    await expect(ada).to_have_url(re.compile(r"/orgs/journey/projects$"))

    # Invite Bob; the link is shown once (and mailed).
    await ada.get_by_role("navigation", name="Org pages").get_by_role("link", name="Invites").click()
    await ada.get_by_label("Email address").fill("bob@example.com")
    await ada.get_by_role("button", name="Send invite").click()
    link = await ada.locator(".form-result .secret-value").inner_text()
    assert link.startswith(server.api + "/invites/")

    # Bob opens it in his own browser, signs in, accepts.
    bob = await (await contexts()).new_page()
    await bob.goto(link)
    await bob.get_by_role("button", name="Sign in to accept").click()
    await bob.get_by_label("Your name").fill("bob-journey")
    await bob.get_by_role("button", name="Sign in").click()
    await bob.get_by_role("button", name="Accept the invite").click()
    await expect(bob).to_have_url(re.compile(r"/orgs/journey/projects$"))
    await expect(bob.get_by_role("status")).to_contain_text("You joined")
    await ada.get_by_role("navigation", name="Org pages").get_by_role("link", name="Members").click()
    await expect(ada.get_by_role("row", name=re.compile("bob-journey"))).to_contain_text("member")

    # A project, deployed by upload; the live URL serves it.
    await ada.get_by_role("navigation", name="Org pages").get_by_role("link", name="Projects").click()
    await ada.get_by_label("Name").fill("shop")
    await ada.get_by_role("button", name="Create project").click()
    await expect(ada).to_have_url(re.compile(r"/orgs/journey/projects/shop$"))
    url = f"http://shop-journey.localhost:{server.edge_port}"
    await ada.get_by_role("navigation", name="Project").get_by_role("link", name="Deployments").click()
    for version, title in ((1, "First shop"), (2, "Second shop")):
        await ada.locator("#bundle-file").set_input_files(
            files=[{"name": "shop.tar.gz", "mimeType": "application/gzip", "buffer": _bundle(title)}])
        await expect(ada.locator("#upload-result")).to_contain_text(f"Version {version} is live at {url}")
        site = await _site(ada, url + "/")
        await expect(site.get_by_role("heading", level=1)).to_have_text(title)
        await site.close()

    # Roll back, with one click and a confirmation.
    await ada.reload()
    await ada.get_by_role("button", name="Roll back to v1").click()
    await expect(ada.locator(".notice[role=status]")).to_have_text(f"Version 1 is live again at {url}")
    site = await _site(ada, url + "/")
    await expect(site.get_by_role("heading", level=1)).to_have_text("First shop")
    await site.close()

    # A password in front of it; a visitor passes it.
    await ada.get_by_role("navigation", name="Project").get_by_role("link", name="Access").click()
    await ada.get_by_role("radio", name="Password").check()
    await ada.get_by_label("Password", exact=False).last.fill(PASSWORD)
    await ada.get_by_role("button", name="Save access").click()
    await expect(ada.get_by_role("status")).to_contain_text("password")
    visitor = await (await contexts()).new_page()
    await visitor.goto(url + "/")
    await expect(visitor.locator("h1")).to_have_text("This site is password-protected")
    await visitor.fill("#password", PASSWORD)
    await visitor.click("button[type=submit]")
    await expect(visitor.get_by_role("heading", level=1)).to_have_text("First shop")

    # A secret: its name and version, never its value.
    await ada.get_by_role("navigation", name="Project").get_by_role("link", name="Secrets").click()
    await ada.get_by_label("Name").fill("API_KEY")
    await ada.get_by_label("Value").fill("value-nobody-sees-again")
    await ada.get_by_role("button", name="Set secret").click()
    await expect(ada.get_by_role("row", name=re.compile("API_KEY"))).to_contain_text("1")
    assert "value-nobody-sees-again" not in await ada.content()

    # A personal access token: shown once, then revoked.
    await ada.get_by_role("link", name="Access tokens").click()
    await ada.get_by_label("Name").fill("ci")
    await ada.get_by_role("button", name="Create token").click()
    token = await ada.locator(".form-result .secret-value").inner_text()
    assert token.startswith("svc_pat_")
    await ada.reload()
    assert token not in await ada.content()
    await ada.get_by_role("button", name="Revoke ci").click()
    await expect(ada.get_by_role("row", name=re.compile("ci"))).to_contain_text("revoked")

    # Delete the project; the teardown is followed live to the end.
    await ada.goto(server.api + "/orgs/journey/projects/shop/settings")
    await ada.get_by_label("Type shop to confirm").fill("shop")
    await ada.get_by_role("button", name="Delete shop").click()
    await expect(ada.get_by_role("status")).to_contain_text("the project is gone")
    gone = await _site(ada, url + "/")
    await expect(gone.get_by_role("heading", level=1)).to_have_text("Unknown host")
