"""The Email tab in a real browser, against a `svc serve` with a mail domain: a member's grant is
refused in words while another project holds the address, then granted; the page shows the
address, the sender and the cap; the log pages newest first and filters by direction; a message
opens and its raw copy downloads; a viewer sees all of it with no grant or revoke; the admin
revokes. On a svc without a mail domain the tab says why email cannot be granted. The log's rows
are written straight into the server's store (tests/support/mail_rows.py)."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from playwright.async_api import BrowserContext, expect
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from svc.kit.clock import utcnow
from svc.models import EmailGrant, Org, Project
from tests.support.mail_rows import add_mail
from tests.support.serve import Server, svc_serve
from tests.web.conftest import look, sign_in
from tests.web.test_access_secrets import _accept, _csrf

MAIL_DOMAIN = "mail.svc.test"
OWNER, MEMBER, VIEWER, ORG = "mlw-owner", "mlw-member", "mlw-viewer", "mlw-team"
RAW = b"From: ann@example.com\r\nTo: hi@site.mlw-team.mail.svc.test\r\nSubject: message 0\r\n\r\nhello\r\n"
ROWS = 30  # more than a page of the tab's log (25)


@pytest.fixture
async def mail_server() -> AsyncIterator[Server]:
    work = Path(tempfile.mkdtemp(prefix="svcml-"))  # short: PowerDNS's socket path must fit
    try:
        async with svc_serve(work, SVC_MAIL_DOMAIN=MAIL_DOMAIN) as server:
            yield server
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _token(http: httpx.AsyncClient, subject: str) -> dict[str, str]:
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    return {"authorization": f"Bearer {r.json()['token']}"}


def _hold(data_dir: Path, project: str, address: str) -> None:
    """A grant of `project` at `address`, straight in the server's store."""
    engine = create_engine(f"sqlite:///{data_dir / 'svc.sqlite3'}")
    try:
        with Session(engine) as s, s.begin():
            row = s.scalars(select(Project).join(Org, Org.id == Project.org_id)
                            .where(Org.slug == ORG, Project.name == project)).one()
            s.add(EmailGrant(project_id=row.id, org_id=row.org_id, address=address, granted_at=utcnow()))
    finally:
        engine.dispose()


async def test_grant_log_message_raw_viewer_and_revoke(mail_server: Server, server: Server,
                                                       contexts: Callable[..., Awaitable[BrowserContext]]) -> None:
    address = f"site.{ORG}.{MAIL_DOMAIN}"
    tab = f"/orgs/{ORG}/projects/site/email"
    async with httpx.AsyncClient(base_url=mail_server.api, timeout=30) as http:
        owner = await _token(http, OWNER)
        assert (await http.post("/v1/orgs", json={"slug": ORG, "name": "Mail team"}, headers=owner)).status_code == 201
        for name in ("site", "old"):
            r = await http.post(f"/v1/orgs/{ORG}/projects", json={"name": name}, headers=owner)
            assert r.status_code == 201, r.text
        for subject, role in ((MEMBER, "member"), (VIEWER, "viewer")):
            await _token(http, subject)
            r = await http.post(f"/v1/orgs/{ORG}/members", json={"provider": "dev", "subject": subject, "role": role},
                                headers=owner)
            assert r.status_code == 201, r.text
        assert mail_server.data_dir is not None
        ids = add_mail(mail_server.data_dir, ORG, "site", ROWS, domain=MAIL_DOMAIN, raw=RAW)
        # "old" holds site's address (as a project being torn down keeps its grant until it goes).
        _hold(mail_server.data_dir, "old", address)

        # 1. The member opens the tab: not granted, the address a grant would fix.
        page = await sign_in(await contexts(also=mail_server), mail_server, MEMBER,
                             next_path=f"/orgs/{ORG}/projects/site")
        await page.get_by_role("navigation", name="Project").get_by_role("link", name="Email", exact=True).click()
        await expect(page.get_by_role("heading", name="site: Email", level=1)).to_be_visible()
        await expect(page.get_by_role("heading", name="Not granted")).to_be_visible()
        await expect(page.locator("#email-grant")).to_contain_text(f"@{address}")
        await expect(page.get_by_role("button", name="Revoke email")).to_have_count(0)

        # The records to publish where the mail domain's DNS is served (this svc's zones do not hold
        # it), as the API gives them, each with a copy button.
        dns = page.get_by_role("table", name="DNS records to publish")
        wanted = (await http.get(f"/v1{tab}/records", headers=owner)).json()
        assert wanted["published"] is False
        await expect(dns.locator("tbody tr")).to_have_count(len(wanted["records"]))
        for r in wanted["records"]:
            await expect(dns.get_by_role("row").filter(has_text=r["name"]).filter(has_text=r["content"])
                         ).to_have_count(1)
        await expect(dns).to_contain_text("._domainkey.")

        # 2. Granting is refused in words while "old" holds the address; nothing changes.
        await page.get_by_role("button", name="Grant email").click()
        alert = page.locator("#email-grant").get_by_role("alert")
        await expect(alert).to_contain_text("Another project already receives mail at this address")
        await expect(alert).to_contain_text("once it is gone, or revoked, grant again")
        await look(page, "email-project")  # its fullest: the log's rows, a refusal in the form
        assert (await http.get(f"/v1{tab}", headers=owner)).json()["granted"] is False

        # 3. Once the owner revoked old's grant, the member's grant fixes the address.
        assert (await http.delete(f"/v1/orgs/{ORG}/projects/old/email", headers=owner)).status_code == 204
        await page.get_by_role("button", name="Grant email").click()
        await expect(page.get_by_role("status").first).to_have_text(
            f"Email granted: the project receives mail at @{address}.")
        await expect(page.get_by_role("heading", name="Granted", exact=True)).to_be_visible()
        facts = page.locator("#email-status")
        await expect(facts).to_contain_text(address)
        await expect(facts).to_contain_text(f"noreply@{address}")
        await expect(facts).to_contain_text("100 (the org's plan)")
        await expect(page.get_by_role("button", name="Revoke email")).to_have_count(0)  # a member: no revoke

        # 4. The log: newest first, a page of 25, then the older ones; filtered by direction.
        log = page.get_by_role("table", name="Mail log")
        rows = log.locator("tbody tr")
        await expect(rows).to_have_count(25)
        await expect(rows.first).to_contain_text(f"message {ROWS - 1}")
        await expect(rows.first).to_contain_text("sent")
        await page.get_by_role("button", name="Older messages").click()
        await expect(rows).to_have_count(ROWS - 25)
        await expect(rows.last).to_contain_text("message 0")
        await expect(page.get_by_role("button", name="Older messages")).to_have_count(0)
        await page.get_by_role("button", name="Newest").click()
        await expect(rows).to_have_count(25)
        await page.get_by_label("Direction").select_option(label="Received")
        await page.get_by_role("button", name="Filter").click()
        await expect(page).to_have_url(re.compile(r"direction=in"))
        await expect(rows).to_have_count(ROWS // 2)
        await expect(rows.filter(has_text="sent")).to_have_count(0)
        await expect(rows.first).to_contain_text(f"message {ROWS - 2}")

        # 5. A message: its fields, and its raw copy downloaded as it was stored.
        await rows.last.get_by_role("link", name="message 0").click()
        await expect(page.get_by_role("heading", name="message 0", level=1)).to_be_visible()
        entry = page.locator("#mail-entry")
        for said in (ids[0], "received", "ann@example.com", f"hi@{address}", "pass", f"{len(RAW)} bytes"):
            await expect(entry).to_contain_text(said)
        await look(page, "email-message")
        async with page.expect_download() as downloading:
            await page.get_by_role("button", name="Download raw (.eml)").click()
        download = await downloading.value
        assert download.suggested_filename == f"{ids[0]}.eml"
        assert Path(await download.path()).read_bytes() == RAW
        await page.goto(mail_server.api + f"{tab}/log/{ids[1]}")
        await expect(page.get_by_text("svc kept no raw copy of this message.")).to_be_visible()
        await expect(page.get_by_role("button", name="Download raw (.eml)")).to_have_count(0)

        # 6. A viewer sees the address and the log, with neither grant nor revoke; a revoke posted
        # all the same is refused.
        viewer = await sign_in(await contexts(also=mail_server), mail_server, VIEWER, next_path=tab)
        await expect(viewer.get_by_role("heading", name="Granted", exact=True)).to_be_visible()
        await expect(viewer.locator("#email-status")).to_contain_text(address)
        await expect(viewer.get_by_role("table", name="Mail log").locator("tbody tr")).to_have_count(25)
        await expect(viewer.get_by_role("button", name="Revoke email")).to_have_count(0)
        await expect(viewer.get_by_role("button", name="Grant email")).to_have_count(0)
        refused = await viewer.request.post(mail_server.api + tab + "/revoke", form={"csrf": await _csrf(viewer)})
        assert refused.status == 403
        assert (await http.get(f"/v1{tab}", headers=owner)).json()["granted"] is True

        # 7. The admin revokes (asked first): the log stays.
        admin = await sign_in(await contexts(also=mail_server), mail_server, OWNER, next_path=tab)
        admin.once("dialog", _accept)
        await admin.get_by_role("button", name="Revoke email").click()
        await expect(admin.get_by_role("status").first).to_have_text(
            "Email revoked: mail to the project's address is refused. Its log is kept.")
        await expect(admin.get_by_role("heading", name="Not granted")).to_be_visible()
        await expect(admin.get_by_role("table", name="Mail log").locator("tbody tr")).to_have_count(25)
        assert (await http.get(f"/v1{tab}", headers=owner)).json()["granted"] is False

    # 8. On a svc without a mail domain, the tab says why email cannot be granted, with no button.
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        auth = await _token(http, "mlw-solo")
        r = await http.post("/v1/orgs/mlw-solo/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
    solo = await sign_in(await contexts(), server, "mlw-solo", next_path="/orgs/mlw-solo/projects/site/email")
    grant = solo.locator("#email-grant")
    await expect(grant).to_contain_text("This svc cannot grant email now: no mail domain (SVC_MAIL_DOMAIN)")
    await expect(grant.get_by_role("button")).to_have_count(0)
    await expect(solo.get_by_text("No mail yet.")).to_be_visible()
