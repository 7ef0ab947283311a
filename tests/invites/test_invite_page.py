"""The invite link's page (GET /invites/{token}, where the invite mail points), a dashboard page:
it shows the invite to anyone holding the link, without sign-in; a signed-in person accepts it
there. Over HTTP against the app here (both stores); the same in a real browser, with two people,
in tests/web/test_orgs_members_invites.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import httpx
from sqlalchemy import update

from svc.kit.clock import human_date, relative, rfc3339, utcnow
from svc.models import Invite
from tests.invites.helpers import invite, org_with_admin
from tests.support.api import Svc, assert_error

HTML = {"accept": "text/html"}


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


def words(page: str) -> str:
    """The page's visible text with its whitespace as a person reads it (one space)."""
    return re.sub(r"\s+", " ", "".join(visible(page).text))


async def set_expiry(svc: Svc, invite_id: str, when: datetime) -> None:
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Invite).where(Invite.id == invite_id).values(expires_at=when))


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form token"
    return found.group(1)


async def browser_signed_in(svc: Svc, subject: str, next_path: str) -> httpx.AsyncClient:
    """A client holding cookies as a browser does, signed in through the dev sign-in form."""
    client = svc.client()
    page = await client.get(f"/signin?next={next_path}", headers=HTML)
    assert page.status_code == 200
    r = await client.post("/signin/dev", data={"subject": subject, "next": next_path, "csrf": csrf_of(page.text)})
    assert r.status_code == 303 and r.headers["location"] == next_path, r.text
    return client


async def test_the_page_shows_a_pending_invite_and_how_to_accept_it(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com", "viewer")
    r = await svc.anon.get(f"/invites/{created['token']}", headers=HTML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    # The token is in this page's address: it is not cached, and no link on it sends the address on.
    assert r.headers["cache-control"] == "no-store" and r.headers["referrer-policy"] == "no-referrer"
    text = words(r.text)
    assert "Join Acme Inc (acme)" in text and "<strong>viewer</strong>" in r.text
    assert f"svc invites accept http://svc.test/invites/{created['token']}" in text
    # Not signed in: a way to sign in that comes back here, and no accept button yet.
    assert f'href="/signin?next=/invites/{created["token"]}"' in r.text and "Sign in to accept" in text
    assert "Accept the invite" not in text
    assert "expires in 7 days, on " in text


async def test_the_expiry_reads_as_a_date_and_the_time_left(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    expiry = (utcnow() + timedelta(days=6, minutes=30)).replace(second=0, microsecond=0)
    await set_expiry(svc, created["id"], expiry)
    r = await svc.anon.get(f"/invites/{created['token']}", headers=HTML)
    seen = visible(r.text)
    text = words(r.text)
    assert "The link works once and expires in 6 days, on " in text, text
    # The date as people write it, and the exact instant for machines in <time datetime>.
    [(instant, shown)] = seen.times
    assert instant == rfc3339(expiry)
    assert re.fullmatch(r"[A-Z][a-z]+day \d{1,2} [A-Z][a-z]+ \d{4}, \d\d:\d\d UTC", shown), shown
    assert datetime.strptime(shown, "%A %d %B %Y, %H:%M UTC").replace(tzinfo=UTC) == expiry
    # No raw timestamp is left for a person to decode.
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text), text

    await set_expiry(svc, created["id"], utcnow() + timedelta(hours=3, minutes=10))
    text = words((await svc.anon.get(f"/invites/{created['token']}", headers=HTML)).text)
    assert "expires in 3 hours, on " in text, text


async def test_an_expired_invite_says_how_long_ago(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    expiry = utcnow() - timedelta(hours=2, minutes=5)
    await set_expiry(svc, created["id"], expiry)
    r = await svc.anon.get(f"/invites/{created['token']}", headers=HTML)
    seen = visible(r.text)
    text = words(r.text)
    assert "This invite has expired." in text and "It expired 2 hours ago, on " in text, text
    assert "Ask an admin of acme to send you a new one." in text
    assert "Sign in to accept" not in text and "Accept the invite" not in text
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
    text = words(r.text)
    assert r.status_code == 200 and "This invite was withdrawn." in text and "Sign in to accept" not in text
    for token in ("x" * 43, "not a token", "x" * 129, "a.b"):
        r = await svc.anon.get(f"/invites/{token}", headers=HTML)
        assert r.status_code == 404 and "This invite link is not valid" in words(r.text), token
        assert "<h1>Not found</h1>" in r.text
    # A client that asks for JSON gets the Error envelope.
    assert_error(await svc.anon.get("/invites/" + "x" * 43, headers={"accept": "application/json"}), 404)


async def test_a_signed_in_person_accepts_and_lands_in_the_org(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com", "member")
    link = f"/invites/{created['token']}"
    bob = await browser_signed_in(svc, "bob", link)
    page = await bob.get(link, headers=HTML)
    text = words(page.text)
    assert "Signed in as bob." in text and "Accept the invite" in text and "Sign in to accept" not in text
    # The accept form needs its token: without it, nothing happens.
    refused = await bob.post(f"{link}/accept", data={})
    assert refused.status_code == 403
    assert (await svc.anon.get(link, headers=HTML)).text.count("Join Acme Inc") >= 1  # still pending

    r = await bob.post(f"{link}/accept", data={"csrf": csrf_of(page.text)})
    assert r.status_code == 303 and r.headers["location"] == "/orgs/acme/projects"
    landed = await bob.get("/orgs/acme/projects", headers=HTML)
    assert "You joined Acme Inc as member." in words(landed.text)
    members = (await alice.client.get("/v1/orgs/acme/members")).json()["members"]
    assert {m["user"]["subject"]: m["role"] for m in members} == {"alice": "admin", "bob": "member"}

    # Opened again, the link says it was used; accepting again is refused in words.
    again = await bob.get(link, headers=HTML)
    assert "This invite has already been accepted." in words(again.text)
    r = await bob.post(f"{link}/accept", data={"csrf": csrf_of(again.text)}, headers=HTML)
    assert r.status_code == 409 and "This invite has already been accepted" in words(r.text)
    assert "Ask an admin of the org for a new invite." in words(r.text)


async def test_a_member_accepting_keeps_their_role(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "someone@example.com", "viewer")
    link = f"/invites/{created['token']}"
    client = await browser_signed_in(svc, "alice", link)
    page = await client.get(link, headers=HTML)
    r = await client.post(f"{link}/accept", data={"csrf": csrf_of(page.text)})
    assert r.status_code == 303
    landed = words((await client.get(r.headers["location"], headers=HTML)).text)
    assert "You were already a member of Acme Inc; your role there stays admin." in landed


async def test_accepting_without_a_session_goes_to_sign_in_first(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    r = await svc.client().post(f"/invites/{created['token']}/accept", data={"csrf": "x"})
    assert r.status_code == 303 and r.headers["location"].startswith("/signin?next=")
    assert len((await alice.client.get("/v1/orgs/acme/members")).json()["members"]) == 1


async def test_the_admins_invites_page_works_without_script(svc: Svc) -> None:
    """Plain form posts (no htmx): the new invite's link on the answer page, once; the lists."""
    await org_with_admin(svc)
    admin = await browser_signed_in(svc, "alice", "/orgs/acme/invites")
    page = await admin.get("/orgs/acme/invites", headers=HTML)
    assert page.status_code == 200 and "No invites are waiting." in words(page.text)
    r = await admin.post("/orgs/acme/invites", data={"email": "Bob@Example.COM", "role": "viewer",
                                                     "csrf": csrf_of(page.text)})
    assert r.status_code == 201
    text = words(r.text)
    assert "Invite to bob@example.com queued to be mailed (viewer; expires in 7 days, on " in text
    [link] = re.findall(r"http://svc\.test/invites/[A-Za-z0-9_-]{43}", text)
    assert "Sign in to accept" in words((await svc.anon.get(link.removeprefix("http://svc.test"),
                                                             headers=HTML)).text)
    listed = await admin.get("/orgs/acme/invites", headers=HTML)
    assert link not in listed.text, "the link is shown once"
    invite_id = re.search(r'/orgs/acme/invites/(inv_[A-Za-z0-9]+)/resend', listed.text)
    assert invite_id

    # Expired: listed apart, still with both actions.
    await set_expiry(svc, invite_id.group(1), utcnow() - timedelta(minutes=3))
    listed = await admin.get("/orgs/acme/invites", headers=HTML)
    assert "No invites are waiting." in words(listed.text) and "Expired" in words(listed.text)
    r = await admin.post(f"/orgs/acme/invites/{invite_id.group(1)}/resend", data={"csrf": csrf_of(listed.text)})
    assert r.status_code == 303
    listed = await admin.get("/orgs/acme/invites", headers=HTML)
    assert "A new invite to bob@example.com is queued to be mailed; it expires in 7 days." in words(listed.text)
    assert "Expired" not in words(listed.text)
    assert (await svc.anon.get(link.removeprefix("http://svc.test"), headers=HTML)).status_code == 404

    r = await admin.post(f"/orgs/acme/invites/{invite_id.group(1)}/revoke", data={"csrf": csrf_of(listed.text)})
    assert r.status_code == 303
    listed = await admin.get("/orgs/acme/invites", headers=HTML)
    assert "The invite to bob@example.com was revoked: its link no longer works." in words(listed.text)
    assert "No invites are waiting." in words(listed.text)
    # Revoked twice: a page in words, not a crash.
    r = await admin.post(f"/orgs/acme/invites/{invite_id.group(1)}/revoke", data={"csrf": csrf_of(listed.text)},
                         headers=HTML)
    assert r.status_code == 404 and "No such invite" in words(r.text)
