"""The DNS pages in a real browser, against the managed PowerDNS that `svc serve` runs: a zone added,
a record set added, edited in place and deleted, each change asked of the nameserver itself with
dnspython; a bad record refused next to its field with nothing reaching the nameserver; DNSSEC
turned on (signatures answered, the DS block filled in by itself), the DS recorded (ds_pending) and
DNSSEC turned off; the zone deleted with its name typed. Viewers see everything read-only, members
change records but not DNSSEC. The keyboard alone can edit a row. With DNS off, the page says why
and how to turn it on."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.asyncquery
import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import httpx
import pytest
from playwright.async_api import Dialog, Page, expect

from tests.support.pdns import PDNS_REQUIRED
from tests.support.serve import Server, svc_serve
from tests.support.wait import WAIT_SECONDS
from tests.web.conftest import look, sign_in

pytestmark = PDNS_REQUIRED

ZONE = "webjourney.example"
DS_TEXT = re.compile(r"^\d+ 13 2 [0-9A-Fa-f]{64}$")


# --- the served nameserver, asked directly ---

@dataclass
class Nameserver:
    port: int

    async def query(self, name: str, rdtype: str, *, want_dnssec: bool = False) -> dns.message.Message:
        q = dns.message.make_query(name, rdtype, want_dnssec=want_dnssec)
        return await dns.asyncquery.udp(q, "127.0.0.1", port=self.port, timeout=2)

    async def answer(self, name: str, rdtype: str) -> list[str]:
        """The records answered for name/type in zone-file text, sorted ([] for none)."""
        r = await self.query(name, rdtype)
        want = dns.rdatatype.from_text(rdtype)
        owner = dns.name.from_text(name)
        found = next((s for s in r.answer if s.rdtype == want and s.name == owner), None)
        return sorted(rd.to_text() for rd in found) if found is not None else []

    async def signed(self, name: str, rdtype: str) -> bool:
        r = await self.query(name, rdtype, want_dnssec=True)
        return any(s.rdtype == dns.rdatatype.RRSIG for s in r.answer)

    async def rcode(self, name: str, rdtype: str) -> str:
        return dns.rcode.to_text((await self.query(name, rdtype)).rcode())


async def until(check: Callable[[], Awaitable[Any]], want: Any, what: str, seconds: float = WAIT_SECONDS) -> None:
    """Wait for the condition (the nameserver follows svc's store within a job run)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    seen: Any = None
    while loop.time() < deadline:
        try:
            seen = await check()
        except dns.exception.Timeout:
            seen = "timeout"
        if seen == want:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what}: wanted {want!r}, the nameserver still says {seen!r}")


@pytest.fixture
def ns(server: Server) -> Nameserver:
    return Nameserver(server.dns_port)


# --- people and zones made through the API ---

async def _token(http: httpx.AsyncClient, subject: str) -> dict[str, str]:
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    return {"authorization": f"Bearer {r.json()['token']}"}


async def _accept(dialog: Dialog) -> None:
    await dialog.accept()


def _row(page: Page, name: str, rtype: str) -> Any:
    """The table row of one record set (its name cell and its type cell)."""
    return page.locator("table.rrsets tbody tr").filter(
        has=page.locator("th code.owner", has_text=re.compile(f"^{re.escape(name)}$"))).filter(
        has=page.locator("td[data-label=Type]", has_text=re.compile(f"^{rtype}$")))


# --- the journey ---

async def test_zone_records_dnssec_and_delete(server: Server, contexts, http, ns: Nameserver) -> None:
    owner = "dnsweb-ada"
    context = await contexts()
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.api)
    page = await sign_in(context, server, owner)
    await page.get_by_role("link", name="DNS", exact=True).click()
    await expect(page.get_by_role("heading", name="DNS", exact=True)).to_be_visible()
    await expect(page.get_by_role("link", name="DNS", exact=True)).to_have_attribute("aria-current", "page")
    await expect(page.get_by_text("No zones yet. Add one below.")).to_be_visible()
    await expect(page.locator(".nameservers pre")).to_have_text("ns1.svc.localhost\nns2.svc.localhost")
    await look(page, "dns-zones-empty")

    # A zone: written as a person might, stored as the canonical name.
    await page.get_by_label("Domain").fill("WebJourney.Example.")
    await page.get_by_role("button", name="Add zone").click()
    await expect(page.get_by_role("heading", name=ZONE, exact=True)).to_be_visible()
    await expect(page).to_have_url(re.compile(rf"/orgs/{owner}/dns/{re.escape(ZONE)}$"))  # the address follows
    await expect(page.get_by_role("status").first).to_contain_text(f"Zone {ZONE} added")
    await until(lambda: ns.rcode(ZONE + ".", "SOA"), "NOERROR", "the new zone is served")
    for rtype in ("SOA", "NS"):  # svc's own sets: locked, not editable
        row = _row(page, "@", rtype)
        await expect(row).to_contain_text("managed by svc")
        await expect(row.get_by_role("button", name=re.compile("Edit|Delete"))).to_have_count(0)
    await expect(_row(page, "@", "NS")).to_contain_text("ns1.svc.localhost.")
    await expect(page.locator(".dnssec-state")).to_contain_text("Off: the nameserver answers without signatures.")
    # The delegation, as this server (a local run: its own PowerDNS trusted) sees it; checked on request.
    delegation = page.locator("section.delegation")
    await expect(delegation.locator(".badge")).to_have_text("Delegated")
    await delegation.get_by_role("button", name="Check now").click()
    await expect(page.get_by_role("status").first).to_contain_text(f"{ZONE} is delegated to svc's nameservers.")

    # An A record, added with the form and answered by the nameserver.
    await page.get_by_label("Name", exact=True).fill("www")
    await page.get_by_label("Type", exact=True).select_option("A")
    await page.locator("#add-ttl").fill("300")
    await page.locator("#add-records").fill("192.0.2.10")
    await page.get_by_role("button", name="Save record set").click()
    await expect(page.get_by_role("status").first).to_contain_text("Saved www A: 1 record, TTL 300 s")
    www = _row(page, "www", "A")
    await expect(www).to_contain_text("192.0.2.10")
    await expect(www.locator("td[data-label=TTL]")).to_have_text("300")
    await until(lambda: ns.answer(f"www.{ZONE}.", "A"), ["192.0.2.10"], "the added record is answered")

    # Edited in place: the row turns into a form, and back once saved.
    await www.get_by_role("button", name="Edit www A").click()
    editing = page.get_by_role("form", name="Edit www A")
    records = editing.get_by_label("Records, one per line")
    await expect(records).to_be_focused()
    await expect(records).to_have_value("192.0.2.10")
    await records.fill("192.0.2.10\n\n192.0.2.11\n")
    await editing.get_by_label("TTL (seconds)").fill("600")
    await editing.get_by_role("button", name="Save www A").click()
    await expect(editing).to_have_count(0)
    await expect(www).to_contain_text("192.0.2.11")
    await expect(www.get_by_role("status")).to_have_text("Saved.")
    await expect(www.get_by_role("button", name="Edit www A")).to_be_focused()
    await expect(www.locator("td[data-label=TTL]")).to_have_text("600")
    await until(lambda: ns.answer(f"www.{ZONE}.", "A"), ["192.0.2.10", "192.0.2.11"], "the edited set is answered")

    # A bad record: refused next to the field, in words, with what was typed kept; nothing changes.
    await www.get_by_role("button", name="Edit www A").click()
    await records.fill("192.0.2.10\n\n192.0.2.300")  # its line in the textarea, the blank one counted
    # Styled by a browser extension (an autofill highlight): swapping the refused form in must not
    # copy that style attribute, an inline style the CSP refuses (the console watch would fail).
    await records.evaluate("el => { el.style.backgroundColor = 'rgb(250, 255, 189)'; }")
    await editing.get_by_role("button", name="Save www A").click()
    await expect(editing.get_by_role("alert")).to_contain_text("Not saved")
    await expect(editing.get_by_role("alert")).to_be_focused()
    error = editing.locator("small.field-error")
    await expect(error).to_contain_text("Line 3 is not a valid A record: expected an IPv4 address")
    await expect(records).to_have_attribute("aria-invalid", "true")
    await expect(records).to_have_value("192.0.2.10\n\n192.0.2.300")
    assert (await records.get_attribute("aria-describedby") or "").split()[-1] == await error.get_attribute("id")
    # The notice of the first save went with the next change: none says "Saved" above a refusal.
    await expect(page.get_by_text("Saved www A: 1 record")).to_have_count(0)
    await look(page, "dns-record-refused")
    await editing.get_by_role("button", name=re.compile("Cancel")).click()
    await expect(www).to_contain_text("192.0.2.11")
    assert await ns.answer(f"www.{ZONE}.", "A") == ["192.0.2.10", "192.0.2.11"]

    # The SOA as the nameserver serves it, its serial moved by every change (svc stores 0); the
    # address is the zone's own, so a reload shows the zone.
    await page.reload()
    served = await ns.answer(f"{ZONE}.", "SOA")
    assert len(served) == 1 and served[0].split()[2] != "0"
    await expect(_row(page, "@", "SOA").locator("td.records")).to_have_text(served[0])

    # Rules of the service, said in words in the add form: a TTL out of range, a CNAME beside an A.
    await page.get_by_label("Name", exact=True).fill("www")
    await page.get_by_label("Type", exact=True).select_option("CNAME")
    await page.locator("#add-ttl").fill("5")
    await page.locator("#add-records").fill("elsewhere.example.")
    await page.get_by_role("button", name="Save record set").click()
    adding = page.get_by_role("form", name="Add a record set")
    await expect(adding.locator("#add-ttl-error")).to_have_text("TTL must be between 60 and 86400 seconds")
    await expect(page.locator("#add-ttl")).to_have_attribute("aria-invalid", "true")
    await page.locator("#add-ttl").fill("3600")
    await page.get_by_role("button", name="Save record set").click()
    await expect(adding.get_by_role("alert")).to_contain_text("A CNAME cannot share its name with other records (A)")
    await expect(adding.get_by_role("alert")).to_contain_text("delete the other records at that name first")
    await expect(page.get_by_label("Name", exact=True)).to_have_value("www")
    await expect(page.get_by_label("Type", exact=True)).to_have_value("CNAME")
    assert await ns.answer(f"www.{ZONE}.", "CNAME") == []
    await page.get_by_label("Name", exact=True).fill("@")
    await page.get_by_label("Type", exact=True).select_option("NS")
    await page.locator("#add-records").fill("ns1.elsewhere.example.")
    await page.get_by_role("button", name="Save record set").click()
    await expect(adding.get_by_role("alert")).to_contain_text("This record set is managed by svc and cannot be changed")
    await expect(adding.get_by_role("alert")).to_contain_text("svc keeps the SOA and the zone's own NS records")
    assert await ns.answer(ZONE + ".", "NS") == ["ns1.svc.localhost.", "ns2.svc.localhost."]

    # Deleted, after the confirmation.
    page.once("dialog", _accept)
    await www.get_by_role("button", name="Delete www A").click()
    await expect(page.get_by_role("status").first).to_contain_text("Deleted www A")
    await expect(www).to_have_count(0)
    await until(lambda: ns.rcode(f"www.{ZONE}.", "A"), "NXDOMAIN", "the deleted record is gone")

    # DNSSEC on: the nameserver signs, and the DS block fills itself in.
    await page.get_by_role("button", name="Enable DNSSEC").click()
    await expect(page.get_by_role("status").first).to_contain_text("DNSSEC on")
    await expect(page.locator(".dnssec-state")).to_contain_text("Signing: the nameserver signs every answer.")
    copy = page.get_by_role("button", name="Copy DS records")
    await expect(copy).to_be_visible()
    ds = (await page.locator("code.ds-records").inner_text()).strip()
    assert DS_TEXT.match(ds), ds
    await until(lambda: ns.signed(ZONE + ".", "SOA"), True, "answers are signed")
    await copy.click()
    await expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert await page.evaluate("navigator.clipboard.readText()") == ds

    # The DS registered at the parent: a bad one refused next to the field, then the right one.
    ds_field = page.get_by_label("DS records, one per line")
    await ds_field.fill("this is not a DS")
    await page.get_by_role("button", name="Record DS").click()
    await expect(page.locator("#ds-input-error")).to_contain_text("Line 1 is not a valid DS record")
    await expect(ds_field).to_have_attribute("aria-invalid", "true")
    await ds_field.fill(ds)
    await page.get_by_role("button", name="Record DS").click()
    await expect(page.get_by_role("status").first).to_contain_text("DS recorded (1): the zone is DS pending")
    await expect(page.locator(".dnssec-state .badge")).to_have_text("DS pending")
    await expect(page.get_by_role("heading", name="DS records recorded at the parent")).to_be_visible()
    api = await _token(http, owner)
    r = await http.get(f"/v1/orgs/{owner}/dns/zones/{ZONE}", headers=api)
    assert (r.json()["dnssec"], r.json()["ds"]) == ("ds_pending", [ds]), r.text

    # DNSSEC off: confirmed, the recorded DS gone, no more signatures.
    page.once("dialog", _accept)
    await page.get_by_role("button", name="Disable DNSSEC").click()
    await expect(page.get_by_role("status").first).to_contain_text("DNSSEC off")
    await expect(page.locator(".dnssec-state .badge")).to_have_text("off")
    await expect(page.get_by_role("heading", name="DS records recorded at the parent")).to_have_count(0)
    await until(lambda: ns.signed(ZONE + ".", "SOA"), False, "answers are no longer signed")
    r = await http.get(f"/v1/orgs/{owner}/dns/zones/{ZONE}", headers=api)
    assert (r.json()["dnssec"], r.json()["ds"]) == ("off", []), r.text

    # The zone deleted, its name typed first.
    delete = page.get_by_role("button", name=f"Delete {ZONE}")
    await expect(delete).to_be_disabled()
    await page.get_by_label(f"Type {ZONE} to confirm").fill(ZONE)
    await delete.click()
    await expect(page.get_by_role("status").first).to_contain_text(f"Zone {ZONE} deleted")
    await expect(page.get_by_text("No zones yet.")).to_be_visible()
    await until(lambda: ns.rcode(ZONE + ".", "SOA"), "REFUSED", "the deleted zone is no longer served")


async def test_viewers_look_members_edit_admins_run_the_zone(server: Server, contexts, http) -> None:
    admin = await _token(http, "dnsweb-boss")
    for who in ("dnsweb-viv", "dnsweb-max"):
        await _token(http, who)  # a member must have signed in once
    r = await http.post("/v1/orgs", json={"slug": "dnsweb-team"}, headers=admin)
    assert r.status_code == 201, r.text
    for who, role in (("dnsweb-viv", "viewer"), ("dnsweb-max", "member")):
        r = await http.post("/v1/orgs/dnsweb-team/members", json={"provider": "dev", "subject": who, "role": role},
                            headers=admin)
        assert r.status_code in (200, 201), r.text
    zones = "/v1/orgs/dnsweb-team/dns/zones"
    for name in ("team.example", "bücher-team.example"):
        r = await http.post(zones, json={"name": name}, headers=admin)
        assert r.status_code == 200, r.text
    r = await http.put(f"{zones}/team.example/rrsets/mail/MX", json={"records": ["10 mx.team.example."]},
                       headers=admin)
    assert r.status_code == 200, r.text

    # A viewer: the zones and records, read-only.
    viewer = await sign_in(await contexts(), server, "dnsweb-viv", next_path="/orgs/dnsweb-team/dns")
    await expect(viewer.get_by_role("link", name="team.example", exact=True)).to_be_visible()
    await expect(viewer.get_by_text("(bücher-team.example)")).to_be_visible()  # the IDN, beside its punycode
    await expect(viewer.get_by_role("link", name="xn--bcher-team-9db.example")).to_be_visible()
    await expect(viewer.get_by_role("button", name="Add zone")).to_have_count(0)
    await expect(viewer.get_by_text("Only an admin of the org adds or deletes zones.")).to_be_visible()
    await viewer.get_by_role("link", name="team.example", exact=True).click()
    await expect(_row(viewer, "mail", "MX")).to_contain_text("10 mx.team.example.")
    await expect(viewer.get_by_role("button", name=re.compile("^(Edit|Delete) "))).to_have_count(0)
    await expect(viewer.get_by_role("form", name="Add a record set")).to_have_count(0)
    await expect(viewer.get_by_role("button", name="Enable DNSSEC")).to_have_count(0)
    await expect(viewer.get_by_role("heading", name="Delete this zone")).to_have_count(0)
    await expect(viewer.get_by_text("Viewers see the records; a member of the org can change them.")).to_be_visible()
    # Even sent by hand (with the page's CSRF token), a viewer's change is refused and nothing moves.
    token = await viewer.evaluate("JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRF-Token']")
    refused = await viewer.request.post(f"{server.api}/orgs/dnsweb-team/dns/team.example/rrsets/mail/MX",
                                        form={"records": "20 other.example.", "csrf_token": token},
                                        headers={"x-csrf-token": token})
    assert refused.status == 403
    r = await http.get(f"{zones}/team.example", headers=admin)
    assert [s["records"] for s in r.json()["rrsets"] if s["type"] == "MX"] == [["10 mx.team.example."]]

    # A member: edits records, but DNSSEC and the zone itself are the admins'.
    member = await sign_in(await contexts(), server, "dnsweb-max", next_path="/orgs/dnsweb-team/dns/team.example")
    mx = _row(member, "mail", "MX")
    await mx.get_by_role("button", name="Edit mail MX").click()
    await member.get_by_role("form", name="Edit mail MX").get_by_label("Records, one per line").fill("20 mx2")
    await member.get_by_role("button", name="Save mail MX").click()
    await expect(mx).to_contain_text("20 mx2.team.example.")
    await expect(member.get_by_role("button", name="Enable DNSSEC")).to_have_count(0)
    await expect(member.get_by_text("An admin of the org can turn DNSSEC on.")).to_be_visible()
    await expect(member.get_by_role("heading", name="Delete this zone")).to_have_count(0)


async def test_a_large_zone_shows_its_first_sets_and_a_filter_finds_the_rest(server: Server, contexts,
                                                                             http) -> None:
    me = await _token(http, "dnsweb-big")
    assert (await http.post("/v1/orgs", json={"slug": "dnsweb-big-org"}, headers=me)).status_code == 201
    zone = "/v1/orgs/dnsweb-big-org/dns/zones/big.example"
    assert (await http.post("/v1/orgs/dnsweb-big-org/dns/zones", json={"name": "big.example"},
                            headers=me)).status_code == 200
    for i in range(205):
        r = await http.put(f"{zone}/rrsets/host{i:03d}/A", json={"records": [f"192.0.2.{i % 250 + 1}"]}, headers=me)
        assert r.status_code == 200, r.text
    page = await sign_in(await contexts(), server, "dnsweb-big", next_path="/orgs/dnsweb-big-org/dns/big.example")
    # 207 sets with the SOA and NS: the first 200 are shown, and the page says how to find the rest.
    await expect(page.get_by_text("Showing the first 200 of 207")).to_be_visible()
    await expect(page.locator("table.rrsets tbody tr")).to_have_count(200)
    await expect(_row(page, "host204", "A")).to_have_count(0)
    await page.get_by_label("Filter by name").fill("host20")
    await page.get_by_role("button", name="Filter").click()
    await expect(_row(page, "host204", "A")).to_contain_text("192.0.2.205")
    await expect(page.locator("table.rrsets tbody tr")).to_have_count(5)  # host200 ... host204
    await expect(page.get_by_text("record sets whose name holds “host20”")).to_be_visible()
    await page.get_by_role("link", name="show all").click()
    await expect(page.get_by_text("Showing the first 200 of 207")).to_be_visible()


async def test_the_keyboard_alone_edits_a_row(server: Server, contexts, http, ns: Nameserver) -> None:
    owner = "dnsweb-kim"
    auth = await _token(http, owner)
    zone = "keys.example"
    r = await http.post(f"/v1/orgs/{owner}/dns/zones", json={"name": zone}, headers=auth)
    assert r.status_code == 200, r.text
    r = await http.put(f"/v1/orgs/{owner}/dns/zones/{zone}/rrsets/@/TXT", json={"records": ['"hello"']},
                       headers=auth)
    assert r.status_code == 200, r.text
    page = await sign_in(await contexts(), server, owner, next_path=f"/orgs/{owner}/dns/{zone}")
    txt = _row(page, "@", "TXT")
    edit = txt.get_by_role("button", name="Edit @ TXT")
    await edit.focus()
    await page.keyboard.press("Enter")
    records = page.get_by_role("form", name="Edit @ TXT").get_by_label("Records, one per line")
    await expect(records).to_be_focused()
    await page.keyboard.press("ControlOrMeta+a")
    await page.keyboard.type('"hello" "world"')
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Save @ TXT")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(txt.get_by_role("status")).to_have_text("Saved.")
    await expect(edit).to_be_focused()
    await until(lambda: ns.answer(zone + ".", "TXT"), ['"hello" "world"'], "the set saved by keyboard is answered")

    # Space opens it too (a button), and Cancel brings the row back with the focus on its Edit button.
    await page.keyboard.press("Space")
    await expect(records).to_be_focused()
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Cancel editing @ TXT")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(edit).to_be_focused()

    # The add form, field after field.
    await page.get_by_label("Name", exact=True).focus()
    for label in ("Type", "TTL (seconds)", "Records, one per line"):
        await page.keyboard.press("Tab")
        await expect(page.get_by_role("form", name="Add a record set").get_by_label(label, exact=True)).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Save record set")).to_be_focused()

    # Without script, the edit link is a page of its own with that row open.
    await page.goto(f"{server.api}/orgs/{owner}/dns/{zone}/rrsets/@/TXT/edit")
    await expect(page.get_by_role("form", name="Edit @ TXT")).to_be_visible()


async def test_with_dns_off_the_page_says_how_to_turn_it_on(contexts, tmp_path: Path) -> None:
    async with svc_serve(tmp_path, SVC_DNS_ENABLED="false") as off:
        page = await sign_in(await contexts(also=off), off, "dnsweb-off")
        await page.get_by_role("link", name="DNS", exact=True).click()
        await expect(page.get_by_role("heading", name="DNS is turned off on this svc")).to_be_visible()
        await expect(page.locator(".dns-off")).to_contain_text("SVC_DNS_ENABLED=false")
        await expect(page.locator(".dns-off")).to_contain_text("pdns-server pdns-backend-sqlite3")
        await expect(page.locator(".dns-off")).to_contain_text("SVC_PDNS_API_URL")
        response = await page.goto(f"{off.api}/orgs/dnsweb-off/dns/example.com")
        assert response is not None and response.status == 200
        await expect(page.get_by_role("heading", name="DNS is turned off on this svc")).to_be_visible()
