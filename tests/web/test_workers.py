"""Workers in a real browser: a project whose worker answers through the edge shows its requests
on the Overview's traffic chart, and its Logs tab shows what the worker printed and threw, new
lines arriving while the page is open; the Deployments page names the version's worker."""

from __future__ import annotations

import httpx
from playwright.async_api import expect

from tests.support.bundles import site
from tests.support.serve import Server
from tests.support.wait import until
from tests.web.conftest import look, sign_in

WORKER = """export default { async fetch(request) {
  const url = new URL(request.url);
  console.log("served", url.pathname);
  if (url.pathname === "/boom") throw new Error("the browser saw this break");
  return Response.json({ path: url.pathname });
} };"""


def _bundle() -> bytes:
    return site({"worker/index.js": WORKER.encode(), "assets/index.html": b"<!doctype html><title>w</title><h1>w</h1>"},
                svc_json={"compatibilityDate": "2025-06-01"})


async def test_logs_tab_traffic_chart_and_the_deployments_worker(server: Server, contexts,
                                                                 http: httpx.AsyncClient) -> None:
    owner = "worker-wanda"
    r = await http.post("/v1/auth/dev/login", json={"subject": owner})
    auth = {"authorization": f"Bearer {r.json()['token']}"}
    assert (await http.post(f"/v1/orgs/{owner}/projects", json={"name": "api"}, headers=auth)).status_code == 201
    r = await http.post(f"/v1/orgs/{owner}/projects/api/deployments", content=_bundle(),
                        headers={**auth, "content-type": "application/gzip"})
    assert r.status_code == 201, r.text
    edge = httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.edge_port}",
                             headers={"host": f"api-{owner}.localhost"})
    async with edge:
        for path in ("/hello", "/there", "/boom"):
            await edge.get(path, headers={"accept": "application/json"})

        async def counted() -> bool:  # counted once svc has read the edge's log (every second)
            traffic = (await http.get(f"/v1/orgs/{owner}/projects/api/traffic", headers=auth)).json()
            return bool(traffic["requests"] >= 3)

        await until(counted, what="the 3 requests counted")

        context = await contexts()
        page = await sign_in(context, server, owner, next_path=f"/orgs/{owner}/projects/api")
        chart = page.locator("svg.traffic-chart")
        await expect(chart).to_be_visible()
        await expect(page.get_by_text("3 requests and")).to_be_visible()
        assert await chart.locator("rect.s5xx").count() == 1 and await chart.locator("rect.s2xx").count() == 1
        await look(page, "workers-overview")

        await page.get_by_role("link", name="Logs").click()
        await expect(page.get_by_role("heading", name="api: logs")).to_be_visible()
        lines = page.locator("#log-lines")
        await expect(lines).to_contain_text("served /hello")
        await expect(lines).to_contain_text("Error: the browser saw this break")
        await page.get_by_text("Stack").first.click()
        await expect(page.locator("#log-lines pre").first).to_contain_text("index.js")
        await look(page, "workers-logs")
        # A request made now shows up without reloading the page.
        await edge.get("/while-you-watch")
        await expect(lines).to_contain_text("served /while-you-watch")

        # Each line names its request by the part of the id that differs; a click on it follows
        # that request alone, across the edge and the worker.
        thrown = lines.locator("tr", has_text="Error: the browser saw this break").get_by_role("link")
        said = (await thrown.inner_text()).removeprefix("request ")
        hello = (await lines.locator("tr", has_text="served /hello").get_by_role("link").inner_text())
        assert said and hello.removeprefix("request ") != said, (said, hello)
        await thrown.click()
        await expect(page.get_by_role("heading", name=f"Request {said}")).to_be_visible()
        await expect(lines).to_contain_text("GET /boom 500")
        await expect(lines).to_contain_text("Error: the browser saw this break")
        await expect(lines).to_contain_text("served /boom")
        await expect(lines.locator("tr")).to_have_count(3)  # the edge's line, and its worker's two
        await expect(lines).not_to_contain_text("served /hello")
        await look(page, "workers-logs-request")
        await page.get_by_role("link", name="All lines").click()
        await expect(lines).to_contain_text("served /hello")

    await page.get_by_role("link", name="Deployments").click()
    await expect(page.locator(".worker")).to_contain_text("Worker worker/index.js, compatibility date 2025-06-01")
