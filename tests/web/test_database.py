"""A project's Database page in a real browser, against a `svc serve` (SQLite, as the package's
`server`) whose projects' databases live on a real PostgreSQL cluster (the session's
`project_cluster`, given as SVC_PROJECT_DB_ADMIN_URL: the served svc's node is then the PostgresNode
`db_svc` makes). A member creates the database and sees where it is, its password only behind a
reveal; a token user made for 30 minutes has its password shown once and logs in to PostgreSQL
until it is deleted from the page; a viewer sees where the database is and nothing secret; a token
of 0 minutes is refused in words and makes nothing.

Then the backups: a member backs it up now (its steps shown live, the generation listed as taken
on request and proven); an admin restores the database to a generation (its phases shown live) and
deletes it with a typed confirmation; the final generation stays listed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any

import asyncpg
import httpx
import pytest
from playwright.async_api import BrowserContext, Page, expect

from svc.adapters.database.process import PrivateCluster
from tests.support.serve import Server, svc_serve
from tests.support.wait import until
from tests.web.conftest import look, sign_in
from tests.web.test_access_secrets import _accept, _csrf, _project

OWNER, MEMBER, VIEWER, ORG = "dbw-owner", "dbw-member", "dbw-viewer", "dbw-team"


@pytest.fixture(scope="module")
async def db_server(tmp_path_factory: pytest.TempPathFactory, project_cluster: PrivateCluster) -> AsyncIterator[Server]:
    """`svc serve` whose database node is PostgresNode(project_cluster.admin_url), as `db_svc` has it."""
    async with svc_serve(tmp_path_factory.mktemp("database-dashboard"), SVC_PROJECT_DB_ENABLED="true",
                         SVC_PROJECT_DB_ADMIN_URL=project_cluster.admin_url,
                         SVC_DATABASE_BACKUP_SECONDS="1") as running:  # change checks every second
        yield running


async def _join(http: httpx.AsyncClient, org: str, owner_auth: dict[str, str], subject: str, role: str) -> str:
    """`subject` signs up (dev login; their API token) and the owner adds them to `org` as `role`."""
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    token: str = r.json()["token"]
    r = await http.post(f"/v1/orgs/{org}/members", json={"provider": "dev", "subject": subject, "role": role},
                        headers=owner_auth)
    assert r.status_code == 201, r.text
    return token


async def _login(conn: dict[str, object], user: str, password: str) -> asyncpg.Connection:
    """A PostgreSQL client at the connection details the API gives."""
    return await asyncpg.connect(host=conn["host"], port=conn["port"], database=conn["database"], user=user,
                                 password=password, ssl=False, timeout=10)


async def _facts(page: Page) -> dict[str, str]:
    """The connection details as the page lists them (each <dt> to its <dd>)."""
    facts: dict[str, str] = await page.locator("#db-connection").first.evaluate(
        """dl => Object.fromEntries([...dl.querySelectorAll(":scope > dt")].map(
             dt => [dt.textContent.trim(), dt.nextElementSibling.textContent.trim()]))""")
    return facts


async def test_database_page_create_reveal_token_users_viewer_and_a_refusal(
        db_server: Server, contexts: Callable[..., Awaitable[BrowserContext]]) -> None:
    async with httpx.AsyncClient(base_url=db_server.api, timeout=30) as http:
        site = await _project(db_server, http, OWNER, deploy=False, org=ORG)
        member_auth = {"authorization": f"Bearer {await _join(http, ORG, site.auth, MEMBER, 'member')}"}
        await _join(http, ORG, site.auth, VIEWER, "viewer")
        api = f"/v1{site.page}/database"
        database_page = site.page + "/database"

        # 1. A member opens the page: no database yet. They create it: where it is, the password
        # behind a reveal and nowhere in the page.
        page = await sign_in(await contexts(also=db_server), db_server, MEMBER, next_path=site.page)
        await expect(page.get_by_text("Signed in as")).to_contain_text(MEMBER)  # as every other page has it
        await page.get_by_role("link", name="Database", exact=True).click()
        await expect(page.get_by_role("heading", name="site: database", level=1)).to_be_visible()
        await expect(page.get_by_role("link", name="Database", exact=True)).to_have_attribute("aria-current", "page")
        await expect(page.get_by_role("heading", name="No database yet")).to_be_visible()
        await expect(page.get_by_text("Signed in as")).to_contain_text(MEMBER)
        assert (await http.get(api, headers=member_auth)).json() == {"db": False}
        await page.get_by_role("button", name="Create database").click()
        await expect(page.get_by_role("status").first).to_have_text(
            "Database ready. Its worker gets env.db on its next request.")
        await expect(page.get_by_role("heading", name="Connection")).to_be_visible()
        await expect(page.get_by_role("heading", name="No database yet")).to_have_count(0)
        r = await http.get(api + "/connect", headers=member_auth)
        assert r.status_code == 200, r.text
        conn = r.json()
        assert await _facts(page) == {"Host": conn["host"], "Port": str(conn["port"]), "Database": conn["database"],
                                      "User": conn["user"], "SSL mode": conn["sslmode"],
                                      "Password": "Reveal password"}
        await expect(page.get_by_role("button", name="Reveal password")).to_be_visible()
        assert conn["password"] not in await page.content()
        await expect(page.get_by_text("Signed in as")).to_contain_text(MEMBER)

        # 2. Reveal: the password appears, the API's; the page opened again hides it again.
        await page.get_by_role("button", name="Reveal password").click()
        shown = page.locator("#db-connection").first.get_by_text(conn["password"], exact=True)
        await expect(shown.first).to_be_visible()
        await expect(page.locator("main")).to_have_count(1)
        await expect(shown).to_have_count(1)
        await page.goto(db_server.api + database_page)
        await expect(page.get_by_role("button", name="Reveal password")).to_be_visible()
        assert conn["password"] not in await page.content()

        # 3. A token user for 30 minutes: its user and password shown once.
        await expect(page.get_by_text("No token users.")).to_be_visible()
        await page.get_by_label("Valid for (minutes)").fill("30")
        await page.get_by_role("button", name="New token user").click()
        notice = page.locator("#new-token")
        await expect(notice).to_contain_text("shown only now")
        codes = [c.strip() for c in await notice.locator("code").all_inner_texts()]
        token_user, token_passwords = codes[0], set(codes[1:])
        assert re.fullmatch(re.escape(conn["user"]) + "_t[0-9a-f]{12}", token_user), codes
        assert len(token_passwords) == 1, codes
        token_password = token_passwords.pop()
        assert len(token_password) >= 24
        await expect(notice.locator("time")).to_have_text(re.compile(r"^in (29|30) minutes$"))
        r = await http.get(api + "/tokens", headers=member_auth)
        assert [t["user"] for t in r.json()["tokens"]] == [token_user]
        await expect(page.locator("main")).to_have_count(1)
        await expect(notice.locator("code")).to_have_count(2)
        await expect(notice).not_to_contain_text("until in ")
        await look(page, "database-token-created")

        await page.reload()
        assert token_password not in await page.content()
        await expect(page.locator("#new-token")).to_have_count(0)
        row = page.get_by_role("row", name=re.compile(token_user))
        await expect(row.get_by_role("cell").first).to_have_text(re.compile(r"^in (29|30) minutes$"))

        # The token user logs in to the project's database as itself.
        con = await _login(conn, token_user, token_password)
        try:
            assert await con.fetchval("select session_user") == token_user
            assert await con.fetchval("select current_database()") == conn["database"]
        finally:
            await con.close()

        # Deleted from the page, after a confirmation: no longer listed, its login refused.
        page.once("dialog", _accept)
        await row.get_by_role("button", name=f"Delete {token_user}").click()
        await expect(page.get_by_role("status").first).to_have_text(
            f"Token user {token_user} deleted; it can no longer connect.")
        await expect(page.get_by_text("No token users.")).to_be_visible()
        await expect(row).to_have_count(0)
        assert (await http.get(api + "/tokens", headers=member_auth)).json()["tokens"] == []
        with pytest.raises((asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError)):
            await _login(conn, token_user, token_password)

        # 4. A viewer sees where the database is, no reveal, no token users, no password; a post
        # to the reveal all the same (with a valid CSRF token) is refused.
        viewer = await sign_in(await contexts(also=db_server), db_server, VIEWER, next_path=site.page)
        await viewer.get_by_role("link", name="Database", exact=True).click()
        await expect(viewer.get_by_role("heading", name="Connection")).to_be_visible()
        assert await _facts(viewer) == {"Host": conn["host"], "Port": str(conn["port"]),
                                        "Database": conn["database"], "User": conn["user"],
                                        "SSL mode": conn["sslmode"]}
        await expect(viewer.get_by_role("button", name="Reveal password")).to_have_count(0)
        await expect(viewer.get_by_role("heading", name="Token users")).to_have_count(0)
        await expect(viewer.get_by_role("button", name="New token user")).to_have_count(0)
        assert conn["password"] not in await viewer.content()
        await expect(viewer.get_by_text("Signed in as")).to_contain_text(VIEWER)
        refused = await viewer.request.post(db_server.api + database_page + "/reveal",
                                            form={"csrf": await _csrf(viewer)})
        assert refused.status == 403
        assert conn["password"] not in await refused.text()

        # 5. The member asks for a token of 0 minutes (past the field's min, as a hand-made post):
        # refused in words, what was typed kept, nothing made.
        minutes = page.get_by_label("Valid for (minutes)")
        await minutes.evaluate("input => input.removeAttribute('min')")
        await minutes.fill("0")
        await page.get_by_role("button", name="New token user").click()
        alert = page.get_by_role("alert")
        await expect(alert).to_contain_text("Valid for (minutes) must be a whole number from 1 to 10,080")
        await expect(minutes).to_have_value("0")
        await expect(page.locator("#new-token")).to_have_count(0)
        await expect(page.get_by_text("No token users.")).to_be_visible()
        assert (await http.get(api + "/tokens", headers=member_auth)).json()["tokens"] == []
        await expect(alert).not_to_contain_text("expiresInMinutes")

        # 6. Back up now, by the member: its steps live on the page, then the generation listed as
        # taken on request and proven by a restore. The viewer has no such button.
        await expect(viewer.get_by_role("button", name="Back up now")).to_have_count(0)
        await page.get_by_role("button", name="Back up now").click()
        progress = page.locator("#db-operation")
        await expect(progress.get_by_role("heading", name="Backup")).to_be_visible()
        await expect(progress).to_contain_text(re.compile(r"Generation 1\.\d+ is taken and proven"))
        await expect(progress.locator("li.done")).to_have_count(3)
        backups = [g for g in (await http.get(api + "/generations", headers=member_auth)).json()["generations"]
                   if g["kind"] == "manual"]
        assert len(backups) == 1 and backups[0]["verified"] is True, backups
        await page.reload()
        row = page.locator("#generations").get_by_role("row", name=re.compile(rf"^{backups[0]['epoch']}\."
                                                                             rf"{backups[0]['seq']} "))
        await expect(row).to_contain_text("on request")
        await expect(row).to_contain_text("yes, restored in")
        await look(page, "database-backed-up")

        # 7. Backups: an admin sees the generations (each proven by a restore), restores the first
        # (its phases live on the page) and the writes made after it are gone.
        con = await _login(conn, conn["user"], conn["password"])
        try:
            await con.execute("create table notes (x int); insert into notes values (1)")
            written = await con.fetchval("select clock_timestamp()")
        finally:
            await con.close()
        first = await _verified_generations(http, api, site.auth, after=written)
        owner = await sign_in(await contexts(also=db_server), db_server, OWNER, next_path=database_page)
        table = owner.locator("#generations")
        await expect(table).to_contain_text(f"{first[0]['epoch']}.{first[0]['seq']}")
        await expect(table).to_contain_text("yes, restored in")
        con = await _login(conn, conn["user"], conn["password"])
        try:
            await con.execute("insert into notes values (2)")
        finally:
            await con.close()
        owner.once("dialog", _accept)
        label = f"Restore {first[0]['epoch']}.{first[0]['seq']}"
        await owner.get_by_role("button", name=label).click()
        progress = owner.locator("#db-operation")
        await expect(progress).to_contain_text("Finished")
        await expect(progress.locator("li.done")).to_have_count(5)
        con = await _login(conn, conn["user"], conn["password"])
        try:
            assert [r[0] for r in await con.fetch("select x from notes order by x")] == [1]
        finally:
            await con.close()
        await owner.reload()
        await expect(owner.locator("#generations")).to_contain_text("before a restore")

        # Delete, with the project's name typed: the final generation stays listed.
        button = owner.get_by_role("button", name="Delete the database")
        await owner.get_by_label("Type site to confirm").fill("nope")
        await expect(button).to_be_disabled()
        await owner.get_by_label("Type site to confirm").fill("site")
        await button.click()
        progress = owner.locator("#db-operation")
        await expect(progress).to_contain_text("The database is gone")
        await owner.reload()
        await expect(owner.get_by_role("heading", name="No database yet")).to_be_visible()
        await expect(owner.locator("#generations")).to_contain_text("final")
        assert (await http.get(api, headers=site.auth)).json() == {"db": False}


async def _verified_generations(http: httpx.AsyncClient, api: str, auth: dict[str, str],
                                after: datetime) -> list[dict[str, Any]]:
    """The generations once the newest was taken after `after` and all are proven (the server
    checks every second)."""

    async def verified() -> list[dict[str, Any]] | None:
        gens: list[dict[str, Any]] = (await http.get(api + "/generations", headers=auth)).json()["generations"]
        if gens and datetime.fromisoformat(gens[0]["createdAt"].replace("Z", "+00:00")) > after \
                and all(g["verified"] is True for g in gens):
            return gens
        return None

    return list(await until(verified, what=f"a verified generation taken after {after}"))
