"""The invite mail: queued with the invite, delivered by its mail.send job over real SMTP, and the
invite's sentAt set only once the server took it. Plus the .eml sink and the audit trail."""

from __future__ import annotations

import json
from datetime import datetime

from svc.adapters.mail.settings import MailSettings
from svc.kit.clock import utcnow
from tests.invites.helpers import audit_rows, invite, listed, org_with_admin
from tests.support.api import Svc
from tests.support.smtp import SmtpSink, deliver_due, eventually, make_due, outbox


def _ms(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


async def test_invite_mail_arrives_with_the_link_then_sent_at_is_set(mail_svc: Svc, sink: SmtpSink) -> None:
    alice = await org_with_admin(mail_svc)
    created = await invite(alice, "bob@example.com", "viewer")
    assert created["sentAt"] is None

    [received] = await sink.wait_for(1, to="bob@example.com")
    message = received.message
    assert message["To"] == "bob@example.com"
    assert message["From"] == mail_svc.ctx.settings_of(MailSettings).mail_from
    assert "Acme Inc" in message["Subject"] and "Alice Admin" in message["Subject"]
    assert f"http://svc.test/invites/{created['token']}" in received.text
    assert "viewer" in received.text

    async def sent() -> bool:
        return (await listed(alice))[0]["sentAt"] is not None

    await eventually(sent, what="the invite's sentAt")
    [row] = await listed(alice)
    sent_at = datetime.fromisoformat(row["sentAt"].replace("Z", "+00:00"))
    assert sent_at >= _ms(received.at), "sentAt is set only after the server accepted the message"
    assert len(sink.messages) == 1
    # Once delivered, the usable link is no longer in the database (nor in its backups).
    [stored] = await outbox(mail_svc)
    assert stored.sent_at is not None and created["token"] not in stored.body


async def test_smtp_down_keeps_sent_at_empty_then_delivers_when_it_is_back(mail_svc: Svc,
                                                                          sink: SmtpSink) -> None:
    sink.stop()
    alice = await org_with_admin(mail_svc)
    created = await invite(alice, "bob@example.com")

    async def attempted() -> bool:
        rows = await outbox(mail_svc)
        return bool(rows) and rows[0].attempts >= 1 and rows[0].last_error is not None

    await eventually(attempted, what="a first delivery attempt")
    [row] = await outbox(mail_svc)
    assert row.sent_at is None and row.failed_at is None
    assert "could not reach" in (row.last_error or "")
    assert row.next_attempt_at > utcnow(), "a deferred message waits before its next attempt"
    assert (await listed(alice))[0]["sentAt"] is None

    # The server comes back; the retry is due (as if its back-off had passed).
    sink.start()
    await make_due(mail_svc)
    [received] = await sink.wait_for(1, to="bob@example.com")
    assert created["token"] in received.text

    async def sent() -> bool:
        return (await listed(alice))[0]["sentAt"] is not None

    await eventually(sent, what="the invite's sentAt")
    [row] = await outbox(mail_svc)
    assert row.attempts == 2 and row.sent_at is not None


async def test_refused_recipient_is_not_retried_and_sent_at_stays_empty(mail_svc: Svc, sink: SmtpSink) -> None:
    sink.refuse("bob@example.com")
    alice = await org_with_admin(mail_svc)
    await invite(alice, "bob@example.com")
    await invite(alice, "carol@example.com")

    async def failed() -> bool:
        rows = [r for r in await outbox(mail_svc) if r.to_addr == "bob@example.com"]
        return bool(rows) and rows[0].failed_at is not None

    await eventually(failed, what="the refusal to be recorded")
    await sink.wait_for(1, to="carol@example.com")
    # The refused message's job is finished: nothing is left to try again.
    async def finished() -> bool:
        return {r.job_status for r in await outbox(mail_svc)} == {"done"}

    await eventually(finished, what="both mail jobs to finish")
    await make_due(mail_svc)
    await deliver_due(mail_svc)
    assert sink.rcpt_answers("bob@example.com") == [550]
    assert sink.to("bob@example.com") == []
    assert all("/invites/" not in r.body for r in await outbox(mail_svc)), "finished mail keeps no link"
    rows = {i["email"]: i for i in await listed(alice)}
    assert rows["bob@example.com"]["sentAt"] is None
    assert rows["bob@example.com"]["state"] == "pending"
    [bob_mail] = [r for r in await outbox(mail_svc) if r.to_addr == "bob@example.com"]
    assert bob_mail.attempts == 1 and "550" in (bob_mail.last_error or "")


async def test_revoke_before_the_mail_job_runs_sends_nothing(held_svc: Svc, sink: SmtpSink) -> None:
    alice = await org_with_admin(held_svc)
    revoked = await invite(alice, "bob@example.com")
    await invite(alice, "carol@example.com")
    assert (await alice.client.delete(f"/v1/orgs/acme/invites/{revoked['id']}")).status_code == 204

    assert await deliver_due(held_svc) == 1
    assert await deliver_due(held_svc) == 0
    assert [m.rcpt_tos for m in sink.messages] == [["carol@example.com"]]
    assert sink.rcpt_answers("bob@example.com") == []
    assert [r.to_addr for r in await outbox(held_svc)] == ["carol@example.com"]


async def test_reinvite_sends_only_the_newest_mail(held_svc: Svc, sink: SmtpSink) -> None:
    alice = await org_with_admin(held_svc)
    first = await invite(alice, "bob@example.com", "viewer")
    second = await invite(alice, "bob@example.com", "member", status=200)

    assert await deliver_due(held_svc) == 1
    [received] = sink.messages
    assert f"/invites/{second['token']}" in received.text
    assert first["token"] not in received.text
    [row] = await listed(alice)
    assert row["id"] == first["id"] and row["sentAt"] is not None

    # Re-inviting once more clears sentAt until the new mail has gone out.
    third = await invite(alice, "bob@example.com", "member", status=200)
    assert third["sentAt"] is None and (await listed(alice))[0]["sentAt"] is None
    assert await deliver_due(held_svc) == 1
    assert f"/invites/{third['token']}" in sink.messages[-1].text
    assert (await listed(alice))[0]["sentAt"] is not None


async def test_without_smtp_the_invite_is_written_as_an_eml_file(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    created = await invite(alice, "bob@example.com")
    mail_dir = svc.ctx.settings.mail_dir()

    async def written() -> bool:
        return any(mail_dir.glob("*.eml")) and (await listed(alice))[0]["sentAt"] is not None

    await eventually(written, what="an .eml file and sentAt")
    [path] = list(mail_dir.glob("*.eml"))
    content = path.read_text()
    assert "To: bob@example.com" in content
    assert f"http://svc.test/invites/{created['token']}" in content


async def test_audit_records_invite_uninvite_accept_without_tokens(svc: Svc) -> None:
    alice = await org_with_admin(svc)
    first = await invite(alice, "bob@example.com", "viewer")
    resent = await invite(alice, "bob@example.com", "member", status=200)
    other = await invite(alice, "carol@example.com")
    await alice.client.delete(f"/v1/orgs/acme/invites/{other['id']}")
    dave = await svc.login("dave")
    assert (await dave.client.post(f"/v1/invites/{resent['token']}/accept")).status_code == 200

    rows = await audit_rows(svc, "member.invite", "member.uninvite", "member.accept")
    assert [r.action for r in rows] == ["member.invite"] * 3 + ["member.uninvite", "member.accept"]
    assert all(r.org_slug == "acme" for r in rows)
    assert [r.data["role"] for r in rows[:3]] == ["viewer", "member", "member"]
    assert [r.data["resent"] for r in rows[:3]] == [False, True, False]
    assert [r.target for r in rows] == [first["id"], first["id"], other["id"], other["id"], first["id"]]
    for r in rows[:4]:
        assert "@" not in json.dumps(r.data) + (r.target or ""), "no contact data in invite/uninvite events"
    accept = rows[4]
    assert accept.actor_user_id == dave.id
    assert accept.data["email"] == "bob@example.com" and accept.data["user"] == dave.id
    assert accept.data["invite"] == first["id"] and accept.data["role"] == "member"
    everything = json.dumps([[r.target, r.data, r.actor_subject] for r in await audit_rows(svc)])
    for token in (first["token"], resent["token"], other["token"]):
        assert token not in everything
