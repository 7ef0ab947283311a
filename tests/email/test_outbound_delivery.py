"""Outbound mail's refusals and the relay's answers (docs/email.md "Outbound"): the plan's hourly
cap (429 with Retry-After), the suppression list, a 5xx failing the message, a 4xx retried with the
job queue's backoff, a message re-sent whole (send_raw), and the .eml files of a svc without a relay."""

from __future__ import annotations

import asyncio
import email
import email.policy
from datetime import timedelta

import dkim
import pytest
from sqlalchemy import func, select, update

from svc.domains.email import outbound
from svc.domains.email.outbound import MAX_ATTEMPTS
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Job, JobStatus, MailLogEntry, MailSuppression, Project
from svc.settings import Settings
from svc.uow import unit_of_work
from tests.email.conftest import MAIL_DOMAIN
from tests.email.test_outbound import ADDRESS, E, deliver, dns_txt, granted_team
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.smtp import SmtpSink
from tests.support.wait import until

MESSAGE = {"to": ["carol@example.com"], "subject": "Hi", "text": "Hello.\n"}


async def _rows(svc: Svc) -> list[MailLogEntry]:
    async with svc.ctx.db.transaction(write=False) as s:
        return list((await s.scalars(select(MailLogEntry).order_by(MailLogEntry.created_at))).all())


async def _send_jobs(svc: Svc) -> list[Job]:
    async with svc.ctx.db.transaction(write=False) as s:
        return list((await s.scalars(select(Job).where(Job.kind == "email.send"))).all())


async def _make_due(svc: Svc) -> None:
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Job).where(Job.kind == "email.send", Job.status == JobStatus.queued)
                        .values(run_at=utcnow() - timedelta(seconds=1)))


async def _project(svc: Svc) -> Project:
    async with svc.ctx.db.transaction(write=False) as s:
        return (await s.scalars(select(Project).where(Project.name == "site"))).one()


async def test_past_the_hourly_cap_a_send_is_429_with_retry_after(out_svc: Svc, sink: SmtpSink) -> None:
    team = await granted_team(out_svc)
    project = await _project(out_svc)
    now = utcnow()
    # The free plan's 100 an hour: 99 sent over the last 40 minutes (and one of 2 hours ago, and a
    # suppressed one, which do not count), then the 100th through the API.
    async with out_svc.ctx.db.transaction() as s:
        for i, age in enumerate([timedelta(minutes=40)] * 99 + [timedelta(hours=2)]):
            s.add(MailLogEntry(id=new_id("mail"), project_id=project.id, org_id=project.org_id, direction="out",
                               from_addr=f"noreply@{ADDRESS}", to_addr="x@example.com", subject=f"{i}",
                               outcome="sent", size=1, created_at=now - age, updated_at=now - age))
        s.add(MailLogEntry(id=new_id("mail"), project_id=project.id, org_id=project.org_id, direction="out",
                           from_addr=f"noreply@{ADDRESS}", to_addr="x@example.com", subject="s",
                           outcome="suppressed", size=0, created_at=now, updated_at=now))
    assert (await team.bob.client.post(E + "/send", json=MESSAGE)).status_code == 202
    refused = await team.bob.client.post(E + "/send", json=MESSAGE)
    body = assert_error(refused, 429, "rate_limited")
    wait = int(refused.headers["Retry-After"])
    # Until the oldest counted message (40 minutes old) leaves the hour: about 20 minutes.
    assert 19 * 60 <= wait <= 20 * 60 and body["details"]["retryAfter"] == wait
    assert len(await _send_jobs(out_svc)) == 1, "nothing queued for the refused send"
    assert len(await _rows(out_svc)) == 102


async def test_a_suppressed_recipient_is_dropped(out_svc: Svc, sink: SmtpSink) -> None:
    team = await granted_team(out_svc)
    project = await _project(out_svc)
    async with out_svc.ctx.db.transaction() as s:
        s.add(MailSuppression(project_id=project.id, recipient="carol@example.com", reason="bounced",
                              created_at=utcnow()))
    only = await team.bob.client.post(E + "/send", json=MESSAGE | {"to": ["Carol@Example.com"]})
    assert only.status_code == 202 and only.json()["outcome"] == "suppressed" and only.json()["hasRaw"] is False
    both = await team.bob.client.post(E + "/send", json=MESSAGE | {"to": ["carol@example.com", "dan@example.com"]})
    assert both.status_code == 202 and both.json()["outcome"] == "queued"
    assert both.json()["to"] == "dan@example.com"
    assert len(await _send_jobs(out_svc)) == 1, "the all-suppressed message has no job"
    await deliver(out_svc)
    [got] = await sink.wait_for(1)
    assert got.rcpt_tos == ["dan@example.com"]
    assert sink.rcpt_answers("carol@example.com") == []
    sent = (await team.vic.client.get(E, params={})).json()
    assert sent["sent24h"] == 1, "a suppressed message is not counted as sent"


async def test_a_relay_refusing_for_good_fails_the_message(out_svc: Svc, sink: SmtpSink) -> None:
    team = await granted_team(out_svc)
    sink.refuse("carol@example.com")
    mail_id = (await team.bob.client.post(E + "/send", json=MESSAGE)).json()["id"]
    await deliver(out_svc)
    [row] = await _rows(out_svc)
    assert row.outcome == "failed" and "550" in (row.detail or "") and row.attempts == 1
    [job] = await _send_jobs(out_svc)
    assert job.status == JobStatus.done, "a 5xx is not retried"
    assert (await team.vic.client.get(f"{E}/log/{mail_id}")).json()["outcome"] == "failed"
    assert sink.messages == []


async def test_a_relay_deferring_is_retried_then_sent(out_svc: Svc, sink: SmtpSink) -> None:
    team = await granted_team(out_svc)
    sink.defer("carol@example.com")
    await team.bob.client.post(E + "/send", json=MESSAGE)
    await deliver(out_svc)
    [row] = await _rows(out_svc)
    [job] = await _send_jobs(out_svc)
    assert row.outcome == "queued" and job.status == JobStatus.queued and job.attempts == 1
    assert "451" in (job.last_error or "") and job.run_at > utcnow(), "a deferral backs off"
    await deliver(out_svc)
    assert sink.rcpt_answers("carol@example.com") == [451], "not due yet: the relay is not asked again"

    sink.accept("carol@example.com")
    await _make_due(out_svc)
    await deliver(out_svc)
    [row] = await _rows(out_svc)
    assert row.outcome == "sent" and row.attempts == 2
    assert sink.rcpt_answers("carol@example.com") == [451, 250]
    [got] = await sink.wait_for(1)
    assert dkim.verify(got.message.as_bytes(), dnsfunc=await dns_txt(out_svc))


async def test_a_relay_deferring_to_the_last_attempt_fails_the_message(out_svc: Svc, sink: SmtpSink) -> None:
    team = await granted_team(out_svc)
    sink.stop()  # the relay is unreachable
    await team.bob.client.post(E + "/send", json=MESSAGE)
    async with out_svc.ctx.db.transaction() as s:
        await s.execute(update(Job).where(Job.kind == "email.send").values(attempts=MAX_ATTEMPTS - 1))
    await deliver(out_svc)
    [row] = await _rows(out_svc)
    assert row.outcome == "failed" and "gave up" in (row.detail or "") and row.attempts == MAX_ATTEMPTS
    [job] = await _send_jobs(out_svc)
    assert job.status == JobStatus.done


async def test_a_raw_message_is_resent_whole_and_signed(out_svc: Svc, sink: SmtpSink) -> None:
    """send_raw, as a worker's forward() uses it: the message as it came, the envelope svc's."""
    await granted_team(out_svc)
    project = await _project(out_svc)
    raw = (b"From: Alice <alice@example.net>\nTo: someone@site.acme.mail.svc.test\nSubject: Forwarded\n"
           b"Message-ID: <orig-1@example.net>\n\nThe body.\n")
    async with unit_of_work(out_svc.ctx) as uow:
        row = await outbound.send_raw(uow, project, rcpts=["carol@example.com"], raw=raw, from_local="fwd")
        mail_id = row.id
    await deliver(out_svc)
    [got] = await sink.wait_for(1)
    assert got.mail_from == f"fwd@{ADDRESS}" and got.rcpt_tos == ["carol@example.com"]
    assert got.message["Message-ID"] == "<orig-1@example.net>" and got.message["Date"] is not None
    assert dkim.verify(got.message.as_bytes(), dnsfunc=await dns_txt(out_svc))
    [entry] = await _rows(out_svc)
    assert (entry.id, entry.subject, entry.message_id, entry.outcome) == (mail_id, "Forwarded", "orig-1@example.net",
                                                                          "sent")


async def test_without_a_relay_mail_is_written_as_eml_files(settings: Settings) -> None:
    async with running_svc(configured(settings, mail_domain=MAIL_DOMAIN), run_workers=False) as svc:
        team = await granted_team(svc)
        mail_id = (await team.bob.client.post(E + "/send", json=MESSAGE)).json()["id"]
        await deliver(svc)
        folder = svc.ctx.config.settings.data_dir / "mail-out"
        [file] = await until(lambda: list(folder.glob("*.eml")) or None, what="an .eml file")
        message = email.message_from_bytes(file.read_bytes(), policy=email.policy.default)
        assert message["Message-ID"] == f"<{mail_id}@{ADDRESS}>" and message["X-Envelope-To"] == "carol@example.com"
        [row] = await _rows(svc)
        assert row.outcome == "sent" and row.provider_id == file.name
        async with svc.ctx.db.transaction(write=False) as s:
            assert await s.scalar(select(func.count()).select_from(Job).where(Job.status != JobStatus.done,
                                                                              Job.kind == "email.send")) == 0


async def test_two_sends_cannot_both_take_the_last_slot(out_svc: Svc, sink: SmtpSink) -> None:
    """The count runs with the grant held (FOR UPDATE on PostgreSQL; SQLite's writers are serial)."""
    team = await granted_team(out_svc)
    project = await _project(out_svc)
    now = utcnow()
    async with out_svc.ctx.db.transaction() as s:
        for i in range(99):
            s.add(MailLogEntry(id=new_id("mail"), project_id=project.id, org_id=project.org_id, direction="out",
                               from_addr=f"noreply@{ADDRESS}", to_addr="x@example.com", subject=f"{i}",
                               outcome="sent", size=1, created_at=now, updated_at=now))
    answers = await asyncio.gather(*(team.bob.client.post(E + "/send", json=MESSAGE) for _ in range(4)))
    assert sorted(r.status_code for r in answers) == [202, 429, 429, 429]
    assert len(await _send_jobs(out_svc)) == 1


async def test_a_send_that_does_not_commit_leaves_no_blob(out_svc: Svc) -> None:
    await granted_team(out_svc)
    project = await _project(out_svc)
    key = None
    with pytest.raises(RuntimeError):
        async with unit_of_work(out_svc.ctx) as uow:
            row = await outbound.send(uow, project, outbound.Outgoing(to=["carol@example.com"], subject="Hi",
                                                                      text="x"))
            key = row.raw_key
            assert key is not None and await out_svc.ctx.blobs.exists(key)
            raise RuntimeError("the unit of work fails after the send")
    assert key is not None and not await out_svc.ctx.blobs.exists(key)
    assert await _rows(out_svc) == []
