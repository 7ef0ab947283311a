"""Outgoing mail as mail.send jobs on the one job queue, against a real SMTP server, on both stores."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import update

from svc.adapters.mail.smtp import SmtpSender
from svc.context import Adapters
from svc.domains.mail.kinds import MailJob
from svc.domains.mail.service import MAX_ATTEMPTS, queue_mail
from svc.domains.notifications.service import notify
from svc.kit.clock import utcnow
from svc.models import Job, Org
from svc.settings import Settings
from svc.uow import unit_of_work
from tests.support.api import Svc, running_svc
from tests.support.smtp import SmtpSink, deliver_due, eventually, make_due, outbox


async def _queue(svc: Svc, to: str, subject: str = "Hello", body: str = "Hello there.\n",
                 notification_id: str | None = None) -> str:
    async with unit_of_work(svc.ctx) as uow:
        return str(queue_mail(uow, to, subject, body, notification_id=notification_id).id)


async def test_a_deferred_message_waits_then_is_delivered(held_svc: Svc, sink: SmtpSink) -> None:
    sink.defer("bob@example.com")
    await _queue(held_svc, "bob@example.com", body="first try\n")

    assert await deliver_due(held_svc) == 0
    [row] = await outbox(held_svc)
    assert (row.attempts, row.sent_at, row.failed_at) == (1, None, None)
    assert "451" in (row.last_error or "")
    assert row.next_attempt_at > utcnow(), "a deferral backs off"
    # Not due yet: another run does not touch the server.
    assert await deliver_due(held_svc) == 0
    assert sink.rcpt_answers("bob@example.com") == [451]

    await make_due(held_svc)
    assert await deliver_due(held_svc) == 0
    [row] = await outbox(held_svc)
    assert row.attempts == 2
    assert sink.rcpt_answers("bob@example.com") == [451, 451]

    sink.accept("bob@example.com")
    await make_due(held_svc)
    assert await deliver_due(held_svc) == 1
    [row] = await outbox(held_svc)
    assert row.sent_at is not None and row.last_error is None and row.attempts == 3
    [received] = sink.messages
    assert received.text == "first try\n"
    assert received.message["Message-ID"] == f"<{row.id}@localhost>"


async def test_a_message_that_keeps_failing_is_given_up(held_svc: Svc, sink: SmtpSink) -> None:
    sink.defer("bob@example.com")
    await _queue(held_svc, "bob@example.com")
    async with held_svc.ctx.db.transaction() as s:
        await s.execute(update(Job).where(Job.kind == MailJob.send).values(attempts=MAX_ATTEMPTS - 1))

    assert await deliver_due(held_svc) == 0
    [row] = await outbox(held_svc)
    assert row.attempts == MAX_ATTEMPTS and row.failed_at is not None and row.sent_at is None
    assert "gave up" in (row.last_error or "") and row.job_status == "done"
    sink.accept("bob@example.com")
    await make_due(held_svc)
    assert await deliver_due(held_svc) == 0
    assert sink.messages == []


async def test_a_notification_mail_sets_the_notification_sent_at(held_svc: Svc, sink: SmtpSink) -> None:
    alice = await held_svc.login("alice")
    async with unit_of_work(held_svc.ctx) as uow:
        org = (await uow.session.execute(Org.__table__.select().where(Org.slug == alice.personal_org))).one()
        note = notify(uow.session, org_id=org.id, kind="limit", message="Project limit reached")
        await uow.session.flush()
        queue_mail(uow, "alice@example.com", "Project limit reached", "You reached the limit.\n",
                   notification_id=note.id)
    url = f"/v1/orgs/{alice.personal_org}/notifications"
    [before] = (await alice.client.get(url)).json()["notifications"]
    assert before["sentAt"] is None

    assert await deliver_due(held_svc) == 1
    await sink.wait_for(1, to="alice@example.com")
    [after] = (await alice.client.get(url)).json()["notifications"]
    assert after["sentAt"] is not None


async def test_three_workers_at_once_deliver_each_message_once(held_svc: Svc, sink: SmtpSink) -> None:
    ids = [await _queue(held_svc, f"user{n}@example.com", subject=f"Message {n}") for n in range(6)]
    await asyncio.gather(*(deliver_due(held_svc, worker=f"w{n}") for n in range(3)))
    assert len(sink.messages) == 6
    assert sorted(m.message["Subject"] for m in sink.messages) == [f"Message {n}" for n in range(6)]
    assert sorted(m.message["Message-ID"] for m in sink.messages) == sorted(f"<{i}@localhost>" for i in ids)
    assert all(r.sent_at is not None and r.attempts == 1 for r in await outbox(held_svc))


async def test_subjects_are_one_line_and_addresses_are_checked(held_svc: Svc, sink: SmtpSink) -> None:
    await _queue(held_svc, "bob@example.com", subject="Hi\r\nBcc: eve@example.com\tthere")
    async with unit_of_work(held_svc.ctx) as uow:
        for bad in ("", "bob@example.com\r\nBcc: eve@example.com", "a@example.com, b@example.com"):
            with pytest.raises(ValueError):
                queue_mail(uow, bad, "s", "b")
    assert await deliver_due(held_svc) == 1
    [received] = sink.messages
    assert received.message["Subject"] == "Hi Bcc: eve@example.com there"
    assert received.rcpt_tos == ["bob@example.com"]
    assert received.message["Bcc"] is None


async def test_logs_never_carry_the_body_or_the_address(held_svc: Svc, sink: SmtpSink,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    secret = "https://svc.test/invites/s3cr3t-token-value"
    sink.refuse("refused@example.com")
    sink.defer("deferred@example.com")
    for to in ("ok@example.com", "refused@example.com", "deferred@example.com"):
        await _queue(held_svc, to, body=f"Open {secret}\n")
    with caplog.at_level(logging.DEBUG, logger="svc"):
        await deliver_due(held_svc)
    assert len(sink.messages) == 1
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "mail" in logged
    assert "s3cr3t" not in logged and "@example.com" not in logged


async def test_the_worker_delivers_by_itself(mail_svc: Svc, sink: SmtpSink) -> None:
    await _queue(mail_svc, "bob@example.com")
    await sink.wait_for(1, to="bob@example.com")

    async def recorded() -> bool:
        return all(r.sent_at is not None for r in await outbox(mail_svc))

    await eventually(recorded, what="sent_at of the queued message")


async def test_wrong_smtp_credentials_keep_the_mail_for_a_retry(settings: Settings) -> None:
    with SmtpSink(credentials=("svc", "right")) as sink:
        wrong = sink.url.replace("smtp://", "smtp://svc:wrong@")
        async with running_svc(settings, Adapters(mail=SmtpSender(wrong, timeout=10)), run_workers=False) as svc:
            await _queue(svc, "bob@example.com")
            assert await deliver_due(svc) == 0
            [row] = await outbox(svc)
            assert row.failed_at is None and "535" in (row.last_error or "")
        right = sink.url.replace("smtp://", "smtp://svc:right@")
        async with running_svc(settings, Adapters(mail=SmtpSender(right, timeout=10)), run_workers=False) as svc:
            await make_due(svc)
            assert await deliver_due(svc) == 1
        [received] = sink.messages
        assert received.rcpt_tos == ["bob@example.com"]
