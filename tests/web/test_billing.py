"""The billing page in a real browser, against a `svc serve` with the fake Polar (SVC_BILLING=fake):
a free org upgrades through the provider's hosted checkout (a declined card first, then one that
pays), comes back to a page that updates by itself once the signed webhook has made the org pro,
then cancels at the end of the period and resumes. The operator (SVC_OPERATORS) reads the webhook
inbox, checks the org with the provider and applies a delivery again; anyone else finds no such page."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Dialog, expect

from tests.support.serve import Server, svc_serve
from tests.web.conftest import look, sign_in

# The webhook comes back within a second or two; generous for a loaded machine.
PRO_WITHIN_MS = 30_000


@pytest.fixture
async def billing_server() -> AsyncIterator[Server]:
    work = Path(tempfile.mkdtemp(prefix="svcbill-"))  # short: PowerDNS's socket path must fit
    try:
        async with svc_serve(work, SVC_BILLING="fake", SVC_OPERATORS="dev:ada") as server:
            yield server
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _accept(dialog: Dialog) -> None:
    await dialog.accept()


async def test_upgrade_through_the_checkout_then_cancel_and_resume(billing_server: Server, contexts) -> None:
    server = billing_server
    context = await contexts(also=server)
    page = await sign_in(context, server, "ada", next_path="/orgs/ada/projects")
    # The free plan's last project taken elsewhere (the CLI) while the form is open: the refusal
    # offers the upgrade through the checkout (a link to the Billing page), as the list then does.
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        token = (await http.post("/v1/auth/dev/login", json={"subject": "ada"})).json()["token"]
        for name in ("one", "two", "three"):
            r = await http.post("/v1/orgs/ada/projects", json={"name": name},
                                headers={"authorization": f"Bearer {token}"})
            assert r.status_code == 201, r.text
    await page.get_by_label("Name").fill("four")
    await page.get_by_role("button", name="Create project").click()
    refused = page.locator("#project-limit")
    await expect(refused).to_contain_text("This org has used all 3 projects of the free plan.")
    await expect(refused.get_by_role("link", name="upgrade to Pro")).to_have_attribute("href", "/orgs/ada/billing")
    await page.reload()
    await expect(page.get_by_role("button", name="Create project")).to_have_count(0)
    await expect(page.locator("#project-limit")).to_contain_text("or upgrade to Pro (100 projects) on the org's "
                                                                 "Billing page.")
    await page.locator("#project-limit").get_by_role("link", name="upgrade to Pro").click()
    await expect(page.get_by_role("heading", name="Billing", level=1)).to_be_visible()
    card = page.locator("#plan-card")
    await expect(card.get_by_role("heading", level=2)).to_contain_text("Free plan")
    await expect(card).to_contain_text("Projects: 3 of 3")
    await look(page, "billing-free")

    await card.get_by_role("button", name="Upgrade to Pro").click()
    await expect(page.get_by_role("heading", name="Subscribe to svc Pro")).to_be_visible()
    await page.get_by_label("Card number").fill("4000 0000 0000 0002")
    await page.get_by_role("button", name="Pay $20").click()
    await expect(page.get_by_role("alert")).to_have_text("Your card was declined.")
    await page.get_by_role("link", name="Try again").click()
    await page.get_by_label("Card number").fill("4242 4242 4242 4242")
    await page.get_by_role("button", name="Pay $20").click()

    # Back on svc's page, which follows the provider's webhook by itself.
    await page.wait_for_url(f"{server.api}/orgs/ada/billing?paid=1")
    card = page.locator("#plan-card")
    await expect(card.get_by_role("heading", level=2)).to_contain_text("Pro plan", timeout=PRO_WITHIN_MS)
    await expect(card).to_contain_text("Renews on")
    await expect(card).to_contain_text("Projects: 3 of 100")
    await look(page, "billing-pro")

    page.once("dialog", _accept)
    await card.get_by_role("button", name="Cancel at the end of the period").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text("The pro plan ends on")
    await expect(page.locator("#plan-card")).to_contain_text("Cancelled: the pro plan ends on")
    await page.locator("#plan-card").get_by_role("button", name="Keep Pro").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text("The pro plan goes on")
    await expect(page.locator("#plan-card")).to_contain_text("Renews on")

    # The operator's inbox: the deliveries that made the org pro, applied.
    await page.goto(f"{server.api}/operator/billing?outcome=applied")
    await expect(page.get_by_role("heading", name="Billing inbox", level=1)).to_be_visible()
    rows = page.locator("table tbody tr")
    await expect(rows.first).to_contain_text("subscription.")
    await expect(rows.first).to_contain_text("ada")
    await expect(page.get_by_role("navigation", name="Outcome").get_by_role("link", name="Applied")).to_have_attribute(
        "aria-current", "page")
    await look(page, "billing-inbox")
    await page.get_by_role("textbox", name="Org").fill("ada")
    await page.get_by_role("button", name="Check").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text(
        "ada: in step with the provider, still on the pro plan.")
    first = page.locator("table tbody tr").first
    webhook_id = (await first.locator("th code").inner_text()).strip()
    await first.get_by_role("button", name="Apply again").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text(f"{webhook_id} (subscription.")
    await expect(page.locator("#plan-card")).to_have_count(0)
    await page.get_by_role("textbox", name="Org").fill("nobody-here")
    await page.get_by_role("button", name="Check").click()
    await expect(page.get_by_role("alert")).to_contain_text("No org 'nobody-here'")

    # Anyone else: no link to it, and no such page.
    other = await sign_in(await contexts(also=server), server, "bob", next_path="/orgs/bob")
    menu = 'nav[aria-label="Account"] a[href="/operator/billing"]'
    assert await other.locator(menu).count() == 0
    assert await page.locator(menu).count() == 1
    answer = await other.goto(f"{server.api}/operator/billing")
    assert answer is not None and answer.status == 404
