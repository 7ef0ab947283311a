"""The project's Domains tab in a real browser, against `svc serve` with its managed PowerDNS (the
served svc's ownership lookups ask that nameserver): a custom hostname added, the records to create
shown with the last check's words, the TXT record then created through svc's DNS API in another
org's zone, and the card turning Active by itself (the page is never reloaded: its pending card
polls), a second name proven by its CNAME with "Check now" pressed from the keyboard, the edge then
serving the project at the name, a bad name and a taken one refused next to the field, removal
with its confirmation. A viewer sees the hostnames without add, check or remove."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import dns.asyncquery
import dns.exception
import dns.message
import dns.rdatatype
import httpx
from playwright.async_api import Dialog, Locator, Page, expect

from tests.support.bundles import site as bundle
from tests.support.pdns import PDNS_REQUIRED
from tests.support.serve import Server
from tests.support.wait import WAIT_SECONDS
from tests.web.conftest import look, sign_in

pytestmark = PDNS_REQUIRED

SITE_HTML = b"<!doctype html><html lang=en><title>custom</title><h1>served at a custom name</h1></html>"
# Long enough for the background cycle (once a minute) should a poll or a check be missed.
ACTIVE_WITHIN_MS = 70_000


@dataclass
class Site:
    org: str
    auth: dict[str, str]

    @property
    def page(self) -> str:
        return f"/orgs/{self.org}/projects/site"


async def _login(http: httpx.AsyncClient, subject: str) -> dict[str, str]:
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    return {"authorization": f"Bearer {r.json()['token']}"}


async def _site(http: httpx.AsyncClient, owner: str, *, org: str | None = None, deploy: bool = True) -> Site:
    """Project "site" in `org` (made for it) or the owner's personal org, deployed when asked."""
    auth = await _login(http, owner)
    if org is not None:
        r = await http.post("/v1/orgs", json={"slug": org}, headers=auth)
        assert r.status_code == 201, r.text
    org = org or owner
    r = await http.post(f"/v1/orgs/{org}/projects", json={"name": "site"}, headers=auth)
    assert r.status_code == 201, r.text
    if deploy:
        r = await http.post(f"/v1/orgs/{org}/projects/site/deployments",
                            content=bundle({"assets/index.html": SITE_HTML}),
                            headers={**auth, "content-type": "application/gzip"})
        assert r.status_code == 201, r.text
    return Site(org=org, auth=auth)


async def _edge(server: Server, host: str) -> httpx.Response:
    """The edge at its address with the name as Host, as a visitor's browser would send it."""
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.get(f"http://127.0.0.1:{server.edge_port}/", headers={"host": host})


async def _until(check: Callable[[], Awaitable[bool]], what: str, seconds: float = WAIT_SECONDS) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds} s")
        await asyncio.sleep(0.1)


async def _served_by_nameserver(server: Server, name: str, rdtype: str) -> bool:
    """The served svc's own PowerDNS answers `name`/`rdtype` (the ownership lookups ask it)."""
    query = dns.message.make_query(name, rdtype)
    try:
        answer = await dns.asyncquery.udp(query, "127.0.0.1", port=server.dns_port, timeout=2)
    except dns.exception.Timeout:
        return False
    return any(s.rdtype == dns.rdatatype.from_text(rdtype) for s in answer.answer)


def _card(page: Page, host: str) -> Locator:
    return page.locator("article.hostname").filter(
        has=page.get_by_role("heading", level=3, name=re.compile(f"^{re.escape(host)}")))


async def _accept(dialog: Dialog) -> None:
    await dialog.accept()


async def test_add_prove_by_txt_and_cname_then_serve_and_remove(server: Server, contexts, http) -> None:
    unique = uuid.uuid4().hex[:8]
    zone = f"h{unique}.example.net"
    www, shop = f"www.{zone}", f"shop.{zone}"
    owner = f"host-ada-{unique}"
    site = await _site(http, owner)
    # The domain's DNS is hosted by someone else on this svc (another org): proofs by record, not by zone.
    dns_auth = await _login(http, f"host-dns-{unique}")
    dns_org = f"host-dns-{unique}"
    r = await http.post(f"/v1/orgs/{dns_org}/dns/zones", json={"name": zone}, headers=dns_auth)
    assert r.status_code in (200, 201), r.text

    context = await contexts()
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.api)
    page = await sign_in(context, server, owner, next_path=site.page)
    await page.get_by_role("link", name="Domains").click()
    await expect(page.get_by_role("heading", name="site: domains", level=1)).to_be_visible()
    await expect(page.get_by_role("link", name="Domains")).to_have_attribute("aria-current", "page")

    # The default hostname: active, a link to the site at the edge, nothing to remove.
    default_host = f"site-{owner}.localhost"
    default = _card(page, default_host)
    await expect(default.locator(".badge")).to_have_text("Active")
    await expect(default).to_contain_text("Default hostname")
    default_url = f"http://{default_host}:{server.edge_port}/"
    await expect(default.get_by_role("link", name=default_url, exact=True)).to_have_attribute("href", default_url)
    await expect(default.get_by_role("button")).to_have_count(0)

    # A bad name: said next to the field, what was typed kept, nothing added.
    field = page.get_by_label("Hostname", exact=True)
    await field.fill("*.example.com")
    await page.get_by_role("button", name="Add hostname").click()
    error = page.locator("#hostname-name-error")
    await expect(error).to_have_text("Hostname must not be a wildcard: add each name, such as www.example.com")
    await expect(field).to_have_attribute("aria-invalid", "true")
    await expect(field).to_have_value("*.example.com")
    await expect(field).to_be_focused()
    assert "hostname-name-error" in (await field.get_attribute("aria-describedby") or "").split()
    await field.fill("_svc.example.com")
    await field.press("Enter")
    await expect(error).to_contain_text("Hostname must not contain _")
    r = await http.get(f"/v1{site.page}/hostnames", headers=site.auth)
    assert [h["host"] for h in r.json()["hostnames"]] == [default_host]

    # A name of yours (typed as people do): pending, with the records that prove it.
    await field.fill(f"WWW.{zone.upper()}")
    await page.get_by_role("button", name="Add hostname").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text(f"{www} added")
    card = _card(page, www)
    await expect(card.locator(".badge")).to_have_text("Waiting for DNS")
    listed = (await http.get(f"/v1{site.page}/hostnames", headers=site.auth)).json()["hostnames"]
    value = next(h for h in listed if h["host"] == www)["verification"]["value"]
    txt = card.locator("tr.proof-txt")
    await expect(txt.locator("code.record-name")).to_have_text(f"_svc-verify.{www}")
    await expect(txt.locator("code.record-value")).to_have_text(value)
    await expect(card.locator("tr.proof-cname code.record-value")).to_have_text("edge.localhost.")
    await expect(card).to_contain_text("either proves you control the name")
    # Only what applies: nothing promised of zones the org may not hold (issue 24).
    await expect(card).not_to_contain_text("proven at once")
    # The add's own check has run: its words, about the record that is missing.
    await expect(card.locator(".last-check")).to_contain_text(f"TXT _svc-verify.{www} has no record")
    await txt.get_by_role("button", name="Copy the TXT record's value").click()
    assert await page.evaluate("navigator.clipboard.readText()") == value
    pending_edge = await _edge(server, www)
    assert pending_edge.status_code == 404 and pending_edge.json()["code"] == "unknown_hostname"
    await look(page, "hostnames-pending")

    # The TXT record created where the domain's DNS lives; svc checks (as its cycle or `svc
    # hostnames verify` would), and the card, which polls, turns Active on the page as it is.
    await page.evaluate("window.notReloaded = true")
    r = await http.put(f"/v1/orgs/{dns_org}/dns/zones/{zone}/rrsets/_svc-verify.www/TXT",
                       json={"records": [f'"{value}"']}, headers=dns_auth)
    assert r.status_code == 200, r.text
    await _until(lambda: _served_by_nameserver(server, f"_svc-verify.{www}.", "TXT"), "the TXT record served")
    r = await http.post(f"/v1{site.page}/hostnames/{www}/verify", headers=site.auth)
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    await expect(card.locator(".badge")).to_have_text("Active", timeout=ACTIVE_WITHIN_MS)
    assert await page.evaluate("window.notReloaded === true")
    www_url = f"http://{www}:{server.edge_port}/"
    await expect(card.get_by_role("link", name=www_url, exact=True)).to_have_attribute("href", www_url)
    await expect(card.locator("tr.proof-txt")).to_have_count(0)
    await expect(card.locator(".last-check")).to_have_count(0)
    await expect(page.locator("#hostnames-live")).to_have_text(f"{www} is active: the edge serves the project there.")

    # The edge serves the project at the name.
    async def served() -> bool:
        return (await _edge(server, www)).status_code == 200
    await _until(served, f"the edge serving {www}")
    assert "served at a custom name" in (await _edge(server, www)).text

    # A second name, proven by the CNAME, with "Check now" pressed from the keyboard.
    await field.fill(shop)
    await field.press("Enter")
    shop_card = _card(page, shop)
    await expect(shop_card.locator(".badge")).to_have_text("Waiting for DNS")
    await expect(shop_card.locator(".last-check")).to_contain_text("has no record")
    check = shop_card.get_by_role("button", name=f"Check now {shop}")
    await check.focus()
    await page.keyboard.press("Enter")  # nothing created yet: still waiting, the focus kept on the button
    await expect(shop_card.locator(".checked")).to_contain_text("Checked just now")
    await expect(check).to_be_focused()
    r = await http.put(f"/v1/orgs/{dns_org}/dns/zones/{zone}/rrsets/shop/CNAME",
                       json={"records": ["edge.localhost."]}, headers=dns_auth)
    assert r.status_code == 200, r.text
    await _until(lambda: _served_by_nameserver(server, f"{shop}.", "CNAME"), "the CNAME record served")
    await page.keyboard.press("Enter")
    await expect(shop_card.locator(".badge")).to_have_text("Active", timeout=ACTIVE_WITHIN_MS)
    await expect(shop_card.locator(".turned")).to_be_focused()

    # A name another project holds: 409, said next to the field.
    other = await _site(http, f"host-bea-{unique}", deploy=False)
    r = await http.post(f"/v1/orgs/{other.org}/projects/site/hostnames", json={"name": f"api.{zone}"},
                        headers=other.auth)
    assert r.status_code == 200, r.text
    await field.fill(f"api.{zone}")
    await page.get_by_role("button", name="Add hostname").click()
    # Another org holds it unproven: the record that proves it is this org's, said next to the field.
    await expect(error).to_contain_text("This hostname is claimed by a project of another org, which has not proven")
    await expect(error).to_contain_text("publish TXT _svc-verify.")

    # Removed, after the confirmation: the card goes, and the edge no longer serves the project there.
    page.once("dialog", _accept)
    await card.get_by_role("button", name=f"Remove {www}").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text(f"{www} removed")
    await expect(_card(page, www)).to_have_count(0)
    async def unrouted() -> bool:
        gone = await _edge(server, www)
        return gone.status_code == 404 and "served at a custom name" not in gone.text
    await _until(unrouted, f"the edge no longer serving {www}")
    r = await http.get(f"/v1{site.page}/hostnames", headers=site.auth)
    assert [h["host"] for h in r.json()["hostnames"]] == [default_host, shop]


async def test_the_keyboard_reaches_add_and_check(server: Server, contexts, http) -> None:
    unique = uuid.uuid4().hex[:8]
    owner = f"host-kim-{unique}"
    site = await _site(http, owner, deploy=False)
    host = f"www.k{unique}.example.org"
    r = await http.post(f"/v1{site.page}/hostnames", json={"name": host}, headers=site.auth)
    assert r.status_code == 200, r.text
    page = await sign_in(await contexts(), server, owner, next_path=site.page + "/hostnames")
    await expect(page.get_by_role("heading", name="site: domains")).to_be_visible()
    reached: list[str] = []
    for _ in range(80):
        await page.keyboard.press("Tab")
        reached.append(await page.evaluate(
            "(document.activeElement.getAttribute('aria-label') || document.activeElement.textContent || '')"
            ".trim().replace(/\\s+/g, ' ')"))
        if reached[-1] == "Add hostname":
            break
    for control in ("Domains", "Copy the TXT record's value", f"Check now {host}", f"Remove {host}", "Add hostname"):
        assert control in reached, f"{control!r} is not reached by Tab: {reached}"


async def test_a_viewer_sees_hostnames_read_only(server: Server, contexts, http) -> None:
    unique = uuid.uuid4().hex[:8]
    site = await _site(http, f"host-own-{unique}", org=f"host-team-{unique}", deploy=False)
    host = f"www.v{unique}.example.org"
    r = await http.post(f"/v1{site.page}/hostnames", json={"name": host}, headers=site.auth)
    assert r.status_code == 200, r.text
    viewer = f"host-viewer-{unique}"
    page = await sign_in(await contexts(), server, viewer)  # the user exists once signed in
    r = await http.post(f"/v1/orgs/{site.org}/members", json={"provider": "dev", "subject": viewer, "role": "viewer"},
                        headers=site.auth)
    assert r.status_code == 201, r.text

    await page.goto(server.api + site.page + "/hostnames")
    card = _card(page, host)
    await expect(card.locator(".badge")).to_have_text("Waiting for DNS")
    await expect(card.locator("tr.proof-txt code.record-name")).to_have_text(f"_svc-verify.{host}")
    await expect(page.get_by_text("You are a viewer")).to_be_visible()
    for name in ("Add hostname", re.compile("^Check now"), re.compile("^Remove")):
        await expect(page.get_by_role("button", name=name)).to_have_count(0)
    await expect(page.get_by_label("Hostname", exact=True)).to_have_count(0)
    # A post all the same is refused (the API's role rule) and changes nothing.
    csrf = json.loads(await page.locator("body").get_attribute("hx-headers") or "{}")["X-CSRF-Token"]
    refused = await page.request.post(server.api + site.page + f"/hostnames/{host}/delete", form={"csrf": csrf})
    assert refused.status == 403
    r = await http.get(f"/v1{site.page}/hostnames", headers=site.auth)
    assert host in [h["host"] for h in r.json()["hostnames"]]

    # Removed by a member meanwhile (the API, another tab): the viewer's polling card goes by itself.
    await page.evaluate("window.notReloaded = true")
    r = await http.delete(f"/v1{site.page}/hostnames/{host}", headers=site.auth)
    assert r.status_code == 204, r.text
    await expect(card).to_have_count(0)
    await expect(page.locator("#hostnames-live")).to_have_text(f"{host} was removed from this project.")
    assert await page.evaluate("window.notReloaded === true")


async def test_without_script_the_forms_still_work(server: Server, contexts, http) -> None:
    """Plain posts and pages: a refusal is the page again with the error under the field, a check
    and a removal answer with the page and a notice."""
    unique = uuid.uuid4().hex[:8]
    owner = f"host-nojs-{unique}"
    site = await _site(http, owner, deploy=False)
    host = f"www.n{unique}.example.org"
    context = await contexts(java_script_enabled=False)
    page = await sign_in(context, server, owner, next_path=site.page + "/hostnames")
    field = page.get_by_label("Hostname", exact=True)
    await field.fill("192.0.2.1")
    await page.get_by_role("button", name="Add hostname").click()
    await expect(page.locator("#hostname-name-error")).to_have_text(
        "Hostname must be a domain name, not an IP address")
    await expect(field).to_have_value("192.0.2.1")
    await field.fill(host)
    await page.get_by_role("button", name="Add hostname").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text(f"{host} added")
    card = _card(page, host)
    await card.get_by_role("button", name=f"Check now {host}").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text(
        f"Checked {host}: the resolver at 127.0.0.1:{server.dns_port} could not answer")  # no zone serves it
    await _card(page, host).get_by_role("button", name=f"Remove {host}").click()
    await expect(page.locator("p.notice[role=status]")).to_contain_text(f"{host} removed")
    await expect(_card(page, host)).to_have_count(0)
