"""The invite link's page (GET /invites/{token}, where the invite mail points): it shows the
invite to anyone holding the link, and a signed-in person accepts it there, in a real browser."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from svc.kit.clock import human_date, relative, rfc3339, utcnow
from svc.models import Invite
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
    assert "expires in 7 days, on <time" in r.text


class Visible(HTMLParser):
    """The text a person sees (not scripts, styles or attributes), and each <time>'s attribute and text."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.times: list[tuple[str, str]] = []
        self._skip = False
        self._time: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._skip = tag in ("script", "style")
        if tag == "time":
            self._time = dict(attrs).get("datetime") or ""

    def handle_endtag(self, tag: str) -> None:
        self._skip = False

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)
            if self._time is not None:
                self.times.append((self._time, data))
                self._time = None


def visible(page: str) -> Visible:
    parser = Visible()
    parser.feed(page)
    return parser


async def set_expiry(svc: Svc, invite_id: str, when: datetime) -> None:
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Invite).where(Invite.id == invite_id).values(expires_at=when))


async def test_the_expiry_reads_as_a_date_and_the_time_left(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    expiry = (utcnow() + timedelta(days=6, minutes=30)).replace(second=0, microsecond=0)
    await set_expiry(svc, created["id"], expiry)
    r = await svc.anon.get(f"/invites/{created['token']}", headers=HTML)
    seen = visible(r.text)
    text = " ".join(seen.text)
    assert "The link works once and expires in 6 days, on " in text, text
    # The date as people write it, and the exact instant for machines in <time datetime>.
    [(instant, shown)] = seen.times
    assert instant == rfc3339(expiry)
    assert re.fullmatch(r"[A-Z][a-z]+day \d{1,2} [A-Z][a-z]+ \d{4}, \d\d:\d\d UTC", shown), shown
    assert datetime.strptime(shown, "%A %d %B %Y, %H:%M UTC").replace(tzinfo=UTC) == expiry
    # No raw timestamp is left for a person to decode.
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text), text

    await set_expiry(svc, created["id"], utcnow() + timedelta(hours=3, minutes=10))
    text = " ".join(visible((await svc.anon.get(f"/invites/{created['token']}", headers=HTML)).text).text)
    assert "expires in 3 hours, on " in text, text


async def test_an_expired_invite_says_how_long_ago(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    expiry = utcnow() - timedelta(hours=2, minutes=5)
    await set_expiry(svc, created["id"], expiry)
    r = await svc.anon.get(f"/invites/{created['token']}", headers=HTML)
    seen = visible(r.text)
    text = " ".join(seen.text)
    assert "This invite has expired." in text and "It expired 2 hours ago, on " in text, text
    assert 'id="accept"' not in r.text
    [(instant, shown)] = seen.times
    assert instant == rfc3339(expiry) and shown == human_date(expiry)


def test_dates_and_durations_read_as_people_say_them() -> None:
    when = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
    assert human_date(when) == "Tuesday 1 December 2026, 14:05 UTC"
    assert human_date(datetime(2026, 12, 1, 14, 5)) == "Tuesday 1 December 2026, 14:05 UTC"  # naive is UTC
    cases = {
        timedelta(days=7) - timedelta(seconds=1): "in 7 days",
        timedelta(days=6, hours=1): "in 6 days",
        timedelta(hours=23, minutes=50): "in 1 day",
        timedelta(hours=2): "in 2 hours",
        timedelta(minutes=61): "in 1 hour",
        timedelta(minutes=5): "in 5 minutes",
        timedelta(seconds=20): "in less than a minute",
        -timedelta(hours=2, minutes=5): "2 hours ago",
        -timedelta(days=1): "1 day ago",
        -timedelta(seconds=1): "less than a minute ago",
    }
    for delta, said in cases.items():
        assert relative(when + delta, when) == said, delta


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
                    await expect(page.locator("main")).to_contain_text("expires in 7 days, on ")
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
