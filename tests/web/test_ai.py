"""The AI pages in a real browser, against a `svc serve` with the fake Polar (SVC_BILLING=fake) and
the fake model (SVC_AI_FAKE): a member grants AI to a project running the chat example; the admin
buys credit through the provider's hosted checkout and comes back to a card that updates by itself
once the payment's webhook has raised the balance; the worker's call through env.ai shows on the
ledger and in the spend by day and by project; auto top-up is refused a bad threshold in words,
then saved."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from playwright.async_api import BrowserContext, expect

from tests.support import components
from tests.support.bundles import site
from tests.support.serve import Server, svc_serve
from tests.support.wait import until
from tests.web.conftest import look, sign_in

pytestmark = components.WORKERD

EXAMPLE = Path(__file__).parents[2] / "examples" / "chat"
# The webhook comes back within a second or two; generous for a loaded machine.
PAID_WITHIN_MS = 30_000


@pytest.fixture
async def ai_server() -> AsyncIterator[Server]:
    work = Path(tempfile.mkdtemp(prefix="svcai-"))  # short: PowerDNS's socket path must fit
    try:
        async with svc_serve(work, SVC_BILLING="fake", SVC_AI_FAKE="true", SVC_WORKER_PROCESSES="1") as server:
            yield server
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _chat_bundle() -> bytes:
    files = {str(p.relative_to(EXAMPLE)): p.read_bytes() for p in EXAMPLE.rglob("*")
             if p.is_file() and p.name != "svc.json"}
    return site(files, svc_json=json.loads((EXAMPLE / "svc.json").read_text()))


async def test_grant_buy_credit_call_and_auto_top_up(ai_server: Server,
                                                     contexts: Callable[..., Awaitable[BrowserContext]]) -> None:
    server = ai_server
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        token = (await http.post("/v1/auth/dev/login", json={"subject": "ada"})).json()["token"]
        auth = {"authorization": f"Bearer {token}"}
        r = await http.post("/v1/orgs/ada/projects", json={"name": "chat"}, headers=auth)
        assert r.status_code == 201, r.text
        host = r.json()["hostname"]
        r = await http.post("/v1/orgs/ada/projects/chat/deployments", content=_chat_bundle(),
                            headers={**auth, "content-type": "application/gzip"})
        assert r.status_code == 201, r.text

    # The Overview's resources: what svc.json asks for, each one's state, and how it is granted.
    page = await sign_in(await contexts(also=server), server, "ada", next_path="/orgs/ada/projects/chat")
    resources = page.get_by_role("table", name="Resources")
    ai_row, db_row = resources.locator("#resource-ai"), resources.locator("#resource-db")
    await expect(ai_row).to_contain_text("env.ai: AI models, paid from the org's AI credit")
    await expect(ai_row.locator("td").nth(1)).to_have_text("yes")  # declared by the chat example's svc.json
    await expect(ai_row).to_contain_text("not granted")
    await expect(ai_row).to_contain_text("or svc ai grant --project chat")
    await expect(db_row).to_contain_text("env.db: A PostgreSQL database of the project's own")
    await expect(db_row.locator("td").nth(1)).to_have_text("no")
    # This server runs no database cluster (SVC_PROJECT_DB_ENABLED=false): said, with no button.
    await expect(db_row).to_contain_text("This svc cannot grant it now: Project databases are off")
    await expect(db_row.get_by_role("button")).to_have_count(0)
    # Auth keeps its end users in the project's database: off here too, said so.
    await expect(resources.locator("#resource-auth")).to_contain_text(
        "This svc cannot grant it now: Project databases are off")
    await expect(resources.locator("#resource-storage")).to_contain_text("or svc storage grant --project chat")
    await expect(resources).not_to_contain_text("env.AI")
    await expect(resources).not_to_contain_text("env.DB")
    await look(page, "project-overview-resources")
    await ai_row.get_by_role("button", name="Grant AI").click()
    await expect(page.get_by_role("heading", name="chat: AI", level=1)).to_be_visible()
    await expect(page.get_by_role("status").first).to_have_text(
        "AI granted: the worker has env.ai on its next request.")
    await expect(page.get_by_role("heading", name="Granted", exact=True)).to_be_visible()
    await look(page, "ai-project")
    await page.get_by_role("navigation", name="Project").get_by_role("link", name="Overview").click()
    await expect(page.locator("#resource-ai")).to_contain_text("granted")
    await expect(page.locator("#resource-ai")).not_to_contain_text("not granted")
    await expect(page.locator("#resource-ai").get_by_role("button")).to_have_count(0)
    await page.get_by_role("navigation", name="Project").get_by_role("link", name="AI", exact=True).click()

    # No credit yet: the worker's call is refused with svc's code.
    async with httpx.AsyncClient(timeout=30) as client:
        edge = f"http://127.0.0.1:{server.edge_port}/api/chat"
        broke = await client.post(edge, json={"message": "hello"}, headers={"host": host})
        assert broke.status_code == 402 and broke.json()["code"] == "insufficient_credit", broke.text

    # Buying $20 of credit through the provider's hosted checkout.
    await page.locator("main").get_by_role("link", name="AI credit").click()
    await expect(page.get_by_role("heading", name="AI credit", level=1)).to_be_visible()
    await expect(page.locator("#credit-balance")).to_have_text("$0.00")
    await page.get_by_role("radio", name="$20.00").check()
    await page.get_by_role("button", name="Buy credit").click()
    await expect(page.get_by_role("heading", name="Buy AI credit")).to_be_visible()
    await page.get_by_label("Card number").fill("4242 4242 4242 4242")
    await page.get_by_role("button", name="Pay $20").click()
    await page.wait_for_url(f"{server.api}/orgs/ada/ai?after=0")
    await expect(page.locator("#credit-balance")).to_have_text("$20.00", timeout=PAID_WITHIN_MS)

    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.post(edge, json={"message": "hello there"}, headers={"host": host})
        assert answer.status_code == 200 and answer.json()["reply"] == "echo: hello there", answer.text
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:

        async def settled() -> bool:  # an answer goes back before its settlement lands
            entries = (await http.get("/v1/orgs/ada/ai/ledger", headers=auth)).json()["entries"]
            return any(e["kind"] == "call" for e in entries)

        await until(settled, what="the call's settlement")
    await page.reload()
    ledger = page.get_by_role("table", name="Ledger")
    await expect(ledger.locator("tbody tr")).to_have_count(2)
    await expect(ledger.locator("tbody tr").first).to_contain_text("call")
    await expect(ledger.locator("tbody tr").first).to_contain_text("openai/gpt-4o-mini")
    await expect(ledger.locator("tbody tr").last).to_contain_text("$20.00")
    await expect(page.get_by_role("table", name="Spend by project")).to_contain_text("chat")
    chart = page.get_by_role("img", name="Spend by day and project")
    await expect(chart.locator("rect")).to_have_count(1)  # today's bar: one project
    await expect(chart.locator("rect title")).to_contain_text("chat: $0.")
    await expect(page.locator("#credit-card")).not_to_contain_text("Spent in the last 24 hours: $0.00.")

    # Auto top-up: a threshold above the amount is refused in words, then a good one saved.
    form = page.get_by_role("form", name="Auto top-up")
    await form.get_by_role("switch").check()
    await form.get_by_label("Top up below (dollars)").fill("50")
    await form.get_by_label("Amount").select_option(label="$5.00")
    await form.get_by_role("button", name="Save auto top-up").click()
    await expect(form.locator(".form-result")).to_contain_text("above 0 and below amountMicroCents")
    await form.get_by_label("Top up below (dollars)").fill("2")
    await form.get_by_role("button", name="Save auto top-up").click()
    await expect(page.get_by_role("status").first).to_have_text(
        "Auto top-up is on: $5.00 when the balance falls below $2.00.")
    await expect(page.locator("#credit-card")).to_contain_text("Auto top-up: $5.00 when the balance falls below $2.00")
    await look(page, "ai-credit")
