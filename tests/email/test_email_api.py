"""The spec's Email section: status before a grant, a grant fixing the address, revoke, the log
paged by cursor, its entries and raw messages, 404s across projects (docs/email.md)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select

from svc.domains.email import jobs
from svc.domains.email.kinds import EmailJob
from svc.domains.email.service import raw_key
from svc.jobs.registry import JobRun
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import AuditEvent, EmailGrant, MailLogEntry, Project
from svc.uow import Tx, unit_of_work
from tests.email.conftest import MAIL_DOMAIN
from tests.support.api import Svc, assert_error, wait_operation
from tests.support.team import make_team

E = "/v1/orgs/acme/projects/site/email"


async def test_status_grant_and_revoke(mail_svc: Svc) -> None:
    team = await make_team(mail_svc, project="site")
    address = f"site.acme.{MAIL_DOMAIN}"
    # Filled before a grant: the address a grant would fix, the free plan's cap.
    before = (await team.vic.client.get(E)).json()
    assert before == {"granted": False, "address": address, "sender": f"noreply@{address}", "hourlyCap": 100,
                      "sent24h": 0, "received24h": 0}
    assert_error(await team.vic.client.post(E), 403, "forbidden")
    granted = await team.bob.client.post(E)
    assert granted.status_code == 200 and granted.json() == before | {"granted": True}, granted.text
    # Idempotent: the same address.
    assert (await team.bob.client.post(E)).json()["address"] == address
    # Only an admin revokes; revoke is idempotent.
    assert_error(await team.bob.client.delete(E), 403, "forbidden")
    assert (await team.alice.client.delete(E)).status_code == 204
    assert (await team.alice.client.delete(E)).status_code == 204
    assert (await team.vic.client.get(E)).json() == before
    async with mail_svc.ctx.db.transaction(write=False) as s:
        actions = (await s.scalars(select(AuditEvent.action).where(AuditEvent.action.startswith("email."))
                                   .order_by(AuditEvent.at))).all()
    assert list(actions) == ["email.grant", "email.revoke"]


async def test_an_address_another_project_holds_is_refused(mail_svc: Svc) -> None:
    """A project being torn down keeps its grant until its row goes; a new project of the same name
    meanwhile would get the same address."""
    team = await make_team(mail_svc, project="site")
    assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": "old"})).status_code == 201
    async with mail_svc.ctx.db.transaction(write=True) as s:
        old = (await s.scalars(select(Project).where(Project.name == "old"))).one()
        s.add(EmailGrant(project_id=old.id, org_id=old.org_id, address=f"site.acme.{MAIL_DOMAIN}", granted_at=utcnow()))
    assert_error(await team.bob.client.post(E), 409, "email_address_taken")
    async with mail_svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalar(select(func.count()).select_from(EmailGrant))) == 1
    assert (await team.vic.client.get(E)).json()["granted"] is False


async def test_without_a_mail_domain_email_cannot_be_granted(svc: Svc) -> None:
    team = await make_team(svc, project="site")
    assert_error(await team.bob.client.post(E), 409, "email_unavailable")
    assert_error(await team.vic.client.get(E), 503, "email_not_configured")


async def _log_rows(svc: Svc, project: str, n: int, *, raw: bytes | None = None) -> list[str]:
    """n messages in the log of `project`, alternating in and out, a second apart, oldest first."""
    ids = []
    async with svc.ctx.db.transaction(write=True) as s:
        row = (await s.scalars(select(Project).where(Project.name == project))).one()
        start = utcnow() - timedelta(minutes=5)
        for i in range(n):
            mail_id = new_id("mail")
            key = None
            if raw is not None:
                key = raw_key(row.id, mail_id)
                path = Path(svc.ctx.settings.data_dir) / f"{mail_id}.tmp"
                path.write_bytes(raw)
                await svc.ctx.blobs.put_file(key, path)
                path.unlink()
            direction = "in" if i % 2 == 0 else "out"
            s.add(MailLogEntry(id=mail_id, project_id=row.id, org_id=row.org_id, direction=direction,
                               from_addr="a@example.com", to_addr=f"x@site.acme.{MAIL_DOMAIN}", subject=f"n{i}",
                               outcome="received", size=len(raw or b""), spf="pass" if i % 2 == 0 else None,
                               raw_key=key, created_at=start + timedelta(seconds=i), updated_at=start))
            ids.append(mail_id)
    return ids


async def test_the_log_pages_newest_first_by_cursor(mail_svc: Svc) -> None:
    team = await make_team(mail_svc, project="site")
    ids = await _log_rows(mail_svc, "site", 7)
    seen, cursor = [], None
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = (await team.vic.client.get(E + "/log", params=params)).json()
        seen += [e["id"] for e in page["entries"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]
    inbound = (await team.vic.client.get(E + "/log", params={"direction": "in"})).json()["entries"]
    assert [e["id"] for e in inbound] == ids[::-2] and {e["direction"] for e in inbound} == {"in"}
    first = inbound[0]
    assert set(first) == {"id", "direction", "from", "to", "subject", "outcome", "size", "spf", "hasRaw", "createdAt"}
    assert first["hasRaw"] is False and first["spf"] == "pass"
    # Bad input is refused, naming the parameter.
    assert_error(await team.vic.client.get(E + "/log", params={"cursor": "nope!"}), 400, "bad_request")
    assert_error(await team.vic.client.get(E + "/log", params={"direction": "sideways"}), 400, "bad_request")
    assert_error(await team.vic.client.get(E + "/log", params={"limit": 0}), 400, "bad_request")
    assert_error(await team.vic.client.get(E + "/log", params={"page": 2}), 400, "bad_request")


async def test_entries_and_raw_messages_belong_to_their_project(mail_svc: Svc) -> None:
    team = await make_team(mail_svc, project="site", other_project="elsewhere")
    raw = b"From: a@example.com\r\nSubject: hi\r\n\r\nhello\r\n"
    [with_raw] = await _log_rows(mail_svc, "site", 1, raw=raw)
    [without] = await _log_rows(mail_svc, "site", 1)
    [theirs] = await _log_rows(mail_svc, "elsewhere", 1, raw=raw)
    entry = (await team.vic.client.get(f"{E}/log/{with_raw}")).json()
    assert entry["id"] == with_raw and entry["hasRaw"] is True
    r = await team.vic.client.get(f"{E}/log/{with_raw}/raw")
    assert r.status_code == 200 and r.content == raw
    assert r.headers["content-type"].startswith("message/rfc822")
    assert r.headers["content-disposition"].startswith("attachment") and f"{with_raw}.eml" in r.headers[
        "content-disposition"]
    assert_error(await team.vic.client.get(f"{E}/log/{without}/raw"), 404, "not_found")
    # Another org's message is not found here, nor is its raw copy.
    assert_error(await team.vic.client.get(f"{E}/log/{theirs}"), 404, "not_found")
    assert_error(await team.vic.client.get(f"{E}/log/{theirs}/raw"), 404, "not_found")
    assert_error(await team.eve.client.get(f"/v1/orgs/acme/projects/site/email/log/{with_raw}"), 404, "not_found")


async def test_a_project_teardown_takes_its_grant_and_raw_messages(mail_svc: Svc) -> None:
    team = await make_team(mail_svc, project="site")
    assert (await team.bob.client.post(E)).status_code == 200
    raw = b"Subject: kept until the project goes\r\n\r\nbody\r\n"
    [mail_id] = await _log_rows(mail_svc, "site", 1, raw=raw)
    async with mail_svc.ctx.db.transaction(write=False) as s:
        project_id = (await s.scalars(select(Project.id).where(Project.name == "site"))).one()
    key = raw_key(project_id, mail_id)
    assert await mail_svc.ctx.blobs.exists(key)
    op = (await team.alice.client.request("DELETE", "/v1/orgs/acme/projects/site", json={"confirm": "site"})).json()
    assert (await wait_operation(team.alice, "acme", op["operationId"]))["terminalCode"] == "ok"
    assert not await mail_svc.ctx.blobs.exists(key)
    async with mail_svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(EmailGrant)) == 0
        assert await s.scalar(select(func.count()).select_from(MailLogEntry)) == 0
    # The address is free again for a new project of that name.
    assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": "site"})).status_code == 201
    assert (await team.bob.client.post(E)).json()["granted"] is True


async def test_the_log_keeps_the_plan_s_days(mail_svc: Svc) -> None:
    team = await make_team(mail_svc, project="site")
    raw = b"Subject: old\r\n\r\nbody\r\n"
    old, recent = await _log_rows(mail_svc, "site", 2, raw=raw)
    async with mail_svc.ctx.db.transaction(write=True) as s:
        row = await s.get(MailLogEntry, old)
        assert row is not None and row.raw_key is not None
        old_key = row.raw_key
        row.created_at = utcnow() - timedelta(days=31)  # past the free plan's 30 days
    async with unit_of_work(mail_svc.ctx, Tx.WRITE) as uow:
        await jobs.prune_cycle(JobRun(ctx=mail_svc.ctx, job_id="test", kind=EmailJob.prune_cycle, payload={},
                                      attempt=1, max_attempts=1, uow=uow))
    listed = (await team.vic.client.get(E + "/log")).json()["entries"]
    assert [e["id"] for e in listed] == [recent]
    assert not await mail_svc.ctx.blobs.exists(old_key)
