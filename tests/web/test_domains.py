"""The domains pages in a real browser, against the package's `svc serve` with its fake registrar:
a search with prices (a bare word under the registrar's TLDs, full names), the purchase (the price,
the contact, the email disclosure, a refusal in words, then the steps), the domain's page with its
history, the registrar's actions (auth code shown once, lock, auto-renew with its caveat), DNSSEC
on the bought domain (its DS sent to the registrar by svc, then served by the parent), an import;
a viewer may look, not change."""

from __future__ import annotations

from playwright.async_api import expect

from tests.support.serve import Server
from tests.web.conftest import look, sign_in


async def test_search_buy_manage_import(server: Server, contexts, http) -> None:
    context = await contexts()
    page = await sign_in(context, server, "dora", next_path="/orgs/dora/domains")
    await expect(page.get_by_role("heading", name="Domain names", level=1)).to_be_visible()
    # A bare word is searched under the registrar's TLDs, each with its price.
    await page.get_by_label("Names").fill("dora-shop")
    await page.get_by_role("button", name="Search").click()
    results = page.locator("table.domain-results")
    for name, price in (("dora-shop.com", "$12.00"), ("dora-shop.dev", "$15.00"), ("dora-shop.io", "$39.00")):
        await expect(results.get_by_role("row", name=name)).to_contain_text(price)
    await page.get_by_label("Names").fill("dora-shop.com dora.pineapple")
    await page.get_by_role("button", name="Search").click()
    results = page.locator("table.domain-results")
    await expect(results).to_contain_text("$12.00")
    await expect(results).to_contain_text("taken or not for sale")
    await look(page, "domains-search")

    await page.get_by_role("button", name="Buy dora-shop.com").click()
    await expect(page.get_by_role("heading", name="Buy dora-shop.com", level=1)).to_be_visible()
    await expect(page.locator("p.price")).to_contain_text("$12.00 a year")
    form = page.get_by_role("form", name="Buy dora-shop.com")
    await form.get_by_label("Full name").fill("Dora Example")
    await form.get_by_label("Email (the registrar writes here)").fill("dora@example.net")
    await form.get_by_label("Phone").fill("555-1234")  # refused in words, nothing bought
    await form.get_by_label("Street").fill("1 Main St")
    await form.get_by_label("City").fill("Springfield")
    await form.get_by_label("Postal code").fill("12345")
    await form.get_by_label("Country (two letters)").fill("US")
    await look(page, "domains-buy")
    await form.get_by_role("button", name="Buy dora-shop.com").click()
    await expect(form.locator(".form-result")).to_contain_text("phone")
    await form.get_by_label("Phone").fill("+1.5555551234")
    await form.get_by_role("button", name="Buy dora-shop.com").click()

    await page.wait_for_url(f"{server.api}/orgs/dora/domains/dora-shop.com")
    await expect(page.locator("p.notice[role=status]")).to_contain_text("dora@example.net")
    facts = page.locator("dl.domain-facts")
    await expect(facts).to_contain_text("active")
    history = page.locator("table.domain-history")
    for step in ("quote", "payment", "registered", "nameservers"):
        await expect(history).to_contain_text(step)

    await page.get_by_role("button", name="Show the auth code").click()
    code = page.locator(".auth-code code")
    await expect(code).to_be_visible()
    assert len(await code.inner_text()) >= 8
    await page.get_by_role("button", name="Unlock for a transfer").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text("Transfer lock off")
    await page.get_by_role("button", name="Turn auto-renew off").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text("registrar-side auto-renew stays on")
    await look(page, "domain")

    # DNSSEC on the bought domain: svc sends the DS to the registrar itself (no DS to copy or record),
    # and the DS block follows it until the parent serves it.
    await page.get_by_role("link", name="Its zone, records and DNSSEC").click()
    await page.get_by_role("button", name="Enable DNSSEC").click()
    await expect(page.get_by_role("status").first).to_contain_text("svc sends its DS records to the registrar")
    await expect(page.locator(".dnssec-state")).to_contain_text("nothing to register")
    await expect(page.locator(".registrar-ds")).to_contain_text("published: the parent zone serves them",
                                                                timeout=60_000)
    await page.reload()
    await expect(page.locator(".dnssec-state")).to_contain_text("active")
    await expect(page.get_by_label("DS records, one per line")).to_have_count(0)
    await look(page, "domain-dnssec")

    await page.goto(f"{server.api}/orgs/dora/domains")
    await page.get_by_label("Domain registered elsewhere").fill("dora-elsewhere.org")
    await page.get_by_role("button", name="Import").click()
    await page.wait_for_url(f"{server.api}/orgs/dora/domains/dora-elsewhere.org")
    await page.goto(f"{server.api}/orgs/dora/domains")
    await expect(page.locator("table.domains")).to_contain_text("dora-shop.com")
    await expect(page.locator("table.domains")).to_contain_text("imported")
    await look(page, "domains")

    # A viewer of an org sees its domains and their history, and no way to change them.
    assert (await http.post("/v1/auth/dev/login", json={"subject": "vera"})).status_code == 200
    token = (await http.post("/v1/auth/dev/login", json={"subject": "dora"})).json()["token"]
    auth = {"authorization": f"Bearer {token}"}
    assert (await http.post("/v1/orgs", json={"slug": "dora-team"}, headers=auth)).status_code == 201
    added = await http.post("/v1/orgs/dora-team/members", json={"provider": "dev", "subject": "vera",
                                                                "role": "viewer"}, headers=auth)
    assert added.status_code == 201, added.text
    bought = await http.post("/v1/orgs/dora-team/domains", headers=auth, json={
        "name": "dora-team.dev", "contact": {"name": "Dora Example", "email": "dora@example.net",
                                             "phone": "+1.5555551234", "street": "1 Main St", "city": "Springfield",
                                             "postalCode": "12345", "country": "US"}})
    assert bought.status_code == 201, bought.text
    viewer = await sign_in(await contexts(), server, "vera", next_path="/orgs/dora-team/domains/dora-team.dev")
    await expect(viewer.locator("table.domain-history")).to_contain_text("registered")
    await expect(viewer.get_by_role("button", name="Show the auth code")).to_have_count(0)
    await expect(viewer.get_by_role("button", name="Read back from the registrar")).to_have_count(0)
    await viewer.goto(f"{server.api}/orgs/dora-team/domains")
    await expect(viewer.get_by_role("heading", name="Find a domain")).to_have_count(0)
    await expect(viewer.get_by_text("Only an admin of the org buys or imports domains.")).to_be_visible()
