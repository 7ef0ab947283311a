"""The mail provider's notifications, POST /v1/hooks/ses (docs/email.md, "Provider notifications"):
SNS messages signed by a key of the test's own, its certificate served by a local HTTPS server the
app trusts through its SNS state's test-only field; bounces, complaints and deliveries applied to
rows of the log written directly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select

from svc.domains.email.sns import SnsState, cert_url_allowed, subscribe_url_allowed
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import MailLogEntry, MailSuppression, Project
from svc.settings import Settings
from tests.email.conftest import MAIL_DOMAIN
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.sns import SnsServer, ses_event
from tests.support.team import make_team

TOPIC = "arn:aws:sns:us-east-1:123456789012:svc-mail"
HOOK = "/v1/hooks/ses"


@pytest.fixture
def sns_server() -> Iterator[SnsServer]:
    with SnsServer() as server:
        yield server


@pytest.fixture
async def ses_svc(settings: Settings, sns_server: SnsServer) -> AsyncIterator[Svc]:
    async with running_svc(configured(settings, mail_domain=MAIL_DOMAIN, mail_topic=TOPIC)) as running:
        sns_server.trust(running.ctx)
        yield running


async def post(svc: Svc, body: dict[str, Any] | str) -> Any:
    # SNS posts JSON as text/plain.
    return await svc.anon.post(HOOK, content=body if isinstance(body, str) else json.dumps(body),
                               headers={"content-type": "text/plain; charset=UTF-8",
                                        "x-amz-sns-message-type": "Notification"})


async def sent_row(svc: Svc, *, to: str = "jane@example.com, bob@example.com", outcome: str = "sent",
                   provider_id: str | None = None) -> MailLogEntry:
    """A message the project `site` sent, in the log as the outbound path writes it (contract 2)."""
    await make_team(svc, project="site")
    async with svc.ctx.db.transaction(write=True) as s:
        project = (await s.scalars(select(Project).where(Project.name == "site"))).one()
        mail_id = new_id("mail")
        row = MailLogEntry(id=mail_id, project_id=project.id, org_id=project.org_id, direction="out",
                           from_addr=f"noreply@site.acme.{MAIL_DOMAIN}", to_addr=to, subject="hello",
                           outcome=outcome, size=100, message_id=f"{mail_id}@site.acme.{MAIL_DOMAIN}",
                           provider_id=provider_id, created_at=utcnow(), updated_at=utcnow())
        s.add(row)
    return row


async def row_of(svc: Svc, mail_id: str) -> MailLogEntry:
    async with svc.ctx.db.transaction(write=False) as s:
        row = await s.get(MailLogEntry, mail_id)
        assert row is not None
        return row


async def suppressions(svc: Svc) -> list[tuple[str, str, str | None]]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.scalars(select(MailSuppression).order_by(MailSuppression.recipient))).all()
        return [(r.recipient, r.reason, r.mail_id) for r in rows]


# --- who may post -------------------------------------------------------------------------------


async def test_no_topic_is_501(mail_svc: Svc) -> None:
    with SnsServer() as server:
        server.trust(mail_svc.ctx)
        assert_error(await post(mail_svc, server.notification(TOPIC, ses_event("Delivery"))), 501, "mail_topic_unset")
        assert server.requests == []


async def test_malformed_bodies_are_400(ses_svc: Svc, sns_server: SnsServer) -> None:
    for body in ("not json", "[1]", json.dumps({"Type": "Other"}),
                 json.dumps({"Type": "Notification", "TopicArn": TOPIC, "Message": "{}"})):
        assert_error(await post(ses_svc, body), 400, "bad_request")
    assert sns_server.requests == []


async def test_another_topic_is_403_and_nothing_is_fetched(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc)
    other = "arn:aws:sns:us-east-1:123456789012:someone-else"
    body = sns_server.notification(other, ses_event("Bounce", message_id=row.message_id))
    assert_error(await post(ses_svc, body), 403, "wrong_topic")
    assert sns_server.requests == []
    assert (await row_of(ses_svc, row.id)).outcome == "sent"


async def test_a_forged_signature_is_403(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc)
    # Signed by another key than the one the certificate URL serves.
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    body = sns_server.notification(TOPIC, ses_event("Bounce", message_id=row.message_id), key=stranger)
    assert_error(await post(ses_svc, body), 403, "bad_signature")
    # A message changed after signing.
    good = sns_server.notification(TOPIC, ses_event("Delivery", message_id=row.message_id), version="2")
    tampered = good | {"Message": json.dumps(ses_event("Bounce", message_id=row.message_id))}
    assert_error(await post(ses_svc, tampered), 403, "bad_signature")
    assert_error(await post(ses_svc, good | {"SignatureVersion": "3"}), 403, "bad_signature")
    assert_error(await post(ses_svc, good | {"Signature": "not base64!"}), 403, "bad_signature")
    assert (await row_of(ses_svc, row.id)).outcome == "sent"
    assert await suppressions(ses_svc) == []


async def test_a_certificate_url_off_sns_host_is_403_and_never_fetched(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc)
    with SnsServer() as elsewhere:  # a server the app does not trust, with a valid certificate
        for url in (elsewhere.cert_url, sns_server.cert_url.replace("https:", "http:"),
                    sns_server.cert_url + "?x=1", sns_server.origin + "/cert.pem"):
            body = sns_server.notification(TOPIC, ses_event("Bounce", message_id=row.message_id), cert_url=url)
            assert_error(await post(ses_svc, body), 403, "bad_certificate_url")
        assert elsewhere.requests == []
    assert sns_server.requests == []
    assert (await row_of(ses_svc, row.id)).outcome == "sent"


def test_the_production_rule() -> None:
    """SNS's regional host and the certificate's path only; the test's trust unset, as in production."""
    state = SnsState()
    good = ["https://sns.us-east-1.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
            "https://sns.us-gov-west-1.amazonaws.com/SimpleNotificationService-abc.pem",
            "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-abc.pem"]
    bad = ["http://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
           "https://sns.us-east-1.amazonaws.com.evil.test/SimpleNotificationService-abc.pem",
           "https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-abc.pem",
           "https://user@sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
           "https://evil.test/?sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
           "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem?x",
           "https://sns.us-east-1.amazonaws.com/other/SimpleNotificationService-abc.pem",
           "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-xyz.pem",
           "https://s3.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
           "https://sns.amazonaws.com/SimpleNotificationService-abc.pem",
           "https://127.0.0.1/SimpleNotificationService-abc.pem", ""]
    assert [u for u in good if not cert_url_allowed(state, u)] == []
    assert [u for u in bad if cert_url_allowed(state, u)] == []
    confirm = f"https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn={TOPIC}&Token=t"
    assert subscribe_url_allowed(state, confirm, TOPIC)
    assert not subscribe_url_allowed(state, confirm.replace("amazonaws.com", "amazonaws.com.evil.test"), TOPIC)
    assert not subscribe_url_allowed(state, confirm.replace("https", "http"), TOPIC)
    assert not subscribe_url_allowed(state, confirm.replace("svc-mail", "other"), TOPIC)
    assert not subscribe_url_allowed(state, confirm.replace("ConfirmSubscription", "Unsubscribe"), TOPIC)


# --- subscription -------------------------------------------------------------------------------


async def test_a_subscription_is_confirmed_by_a_get_of_its_subscribe_url(ses_svc: Svc, sns_server: SnsServer) -> None:
    r = await post(ses_svc, sns_server.confirmation(TOPIC))
    assert r.status_code == 200 and r.json() == {"applied": False}, r.text
    confirm = sns_server.subscribe_url(TOPIC).removeprefix(sns_server.origin)
    assert sns_server.requests[-1] == confirm


async def test_a_subscribe_url_on_another_host_is_refused_without_a_request(ses_svc: Svc,
                                                                            sns_server: SnsServer) -> None:
    with SnsServer() as elsewhere:
        body = sns_server.confirmation(TOPIC, subscribe_url=sns_server.subscribe_url(TOPIC, elsewhere.origin))
        assert_error(await post(ses_svc, body), 403, "bad_subscribe_url")
        assert elsewhere.requests == []
    # A URL on the trusted host that confirms another topic is refused too.
    other = sns_server.confirmation(TOPIC, subscribe_url=sns_server.subscribe_url("arn:aws:sns:us-east-1:1:x"))
    assert_error(await post(ses_svc, other), 403, "bad_subscribe_url")
    assert all("ConfirmSubscription" not in path for path in sns_server.requests)


# --- notifications ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1", "2"])
async def test_a_permanent_bounce_marks_the_row_and_suppresses(ses_svc: Svc, sns_server: SnsServer,
                                                               version: str) -> None:
    row = await sent_row(ses_svc)
    event = ses_event("Bounce", message_id=row.message_id, recipients=("Jane@Example.com",))
    body = sns_server.notification(TOPIC, event, version=version, subject="Amazon SES Email Event Notification")
    r = await post(ses_svc, body)
    assert r.status_code == 200 and r.json() == {"applied": True}, r.text
    after = await row_of(ses_svc, row.id)
    assert after.outcome == "bounced" and after.detail and "550 5.1.1" in after.detail
    assert await suppressions(ses_svc) == [("jane@example.com", "bounced", row.id)]
    # SNS delivers at least once: the same notification again changes nothing.
    r = await post(ses_svc, body)
    assert r.status_code == 200 and r.json() == {"applied": False}, r.text
    assert await suppressions(ses_svc) == [("jane@example.com", "bounced", row.id)]
    # The certificate was fetched once: kept by URL.
    assert sns_server.requests.count("/SimpleNotificationService-0123456789abcdef.pem") == 1


async def test_a_transient_bounce_marks_the_row_without_suppressing(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc)
    event = ses_event("Bounce", message_id=row.message_id, bounce_type="Transient")
    assert (await post(ses_svc, sns_server.notification(TOPIC, event))).json() == {"applied": True}
    assert (await row_of(ses_svc, row.id)).outcome == "bounced"
    assert await suppressions(ses_svc) == []


async def test_a_complaint_marks_the_row_and_suppresses(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc)
    # Found by the Message-ID among the headers when commonHeaders is absent; a recipient the
    # message was not sent to is never suppressed.
    event = ses_event("Complaint", message_id=row.message_id, recipients=("bob@example.com", "eve@example.com"),
                      headers_only=True)
    assert (await post(ses_svc, sns_server.notification(TOPIC, event))).json() == {"applied": True}
    assert (await row_of(ses_svc, row.id)).outcome == "complained"
    assert await suppressions(ses_svc) == [("bob@example.com", "complained", row.id)]
    # A delivery arriving late does not take the complaint back.
    late = ses_event("Delivery", message_id=row.message_id)
    assert (await post(ses_svc, sns_server.notification(TOPIC, late))).json() == {"applied": False}
    assert (await row_of(ses_svc, row.id)).outcome == "complained"


async def test_a_delivery_marks_the_row(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc)
    event = ses_event("Delivery", message_id=row.message_id)
    assert (await post(ses_svc, sns_server.notification(TOPIC, event, version="2"))).json() == {"applied": True}
    after = await row_of(ses_svc, row.id)
    assert after.outcome == "delivered" and after.detail and "250 ok" in after.detail
    assert await suppressions(ses_svc) == []
    # A bounce after the delivery (the receiving server changed its mind) does move it on.
    bounce = ses_event("Bounce", message_id=row.message_id)
    assert (await post(ses_svc, sns_server.notification(TOPIC, bounce))).json() == {"applied": True}
    assert (await row_of(ses_svc, row.id)).outcome == "bounced"


async def test_an_event_publishing_record_found_by_the_provider_id(ses_svc: Svc, sns_server: SnsServer) -> None:
    """A configuration set's event (eventType) without the original headers: found by mail.messageId."""
    row = await sent_row(ses_svc, provider_id="0100018c-abc-000000")
    event = ses_event("Bounce", provider_id="0100018c-abc-000000", key="eventType")
    assert (await post(ses_svc, sns_server.notification(TOPIC, event))).json() == {"applied": True}
    assert (await row_of(ses_svc, row.id)).outcome == "bounced"
    assert await suppressions(ses_svc) == [("jane@example.com", "bounced", row.id)]


async def test_a_message_id_another_message_carries_never_moves_its_row(ses_svc: Svc, sns_server: SnsServer) -> None:
    """A worker's forward or reply keeps the Message-ID it was given: a tenant can send one that names
    another project's message. Its bounce is found by the provider's id, on its own row."""
    victim = await sent_row(ses_svc, provider_id="0100018c-victim-000000")
    async with ses_svc.ctx.db.transaction(write=True) as s:
        forged = MailLogEntry(id=new_id("mail"), project_id=victim.project_id, org_id=victim.org_id, direction="out",
                              from_addr="x@elsewhere.test", to_addr="jane@example.com", subject="forged",
                              outcome="sent", size=1, message_id=victim.message_id,
                              provider_id="0100018c-forged-000000", created_at=utcnow(), updated_at=utcnow())
        s.add(forged)
    event = ses_event("Bounce", message_id=victim.message_id, provider_id="0100018c-forged-000000")
    assert (await post(ses_svc, sns_server.notification(TOPIC, event))).json() == {"applied": True}
    assert (await row_of(ses_svc, forged.id)).outcome == "bounced"
    assert (await row_of(ses_svc, victim.id)).outcome == "sent"


async def test_unknown_types_and_ids_are_200_and_change_nothing(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc, provider_id="0100018c-mine-000000")
    bodies = [
        ses_event("Bounce", message_id="someone-else@example.com", provider_id="0100018c-other-000000"),
        ses_event("Open", message_id=row.message_id, key="eventType"),
        ses_event("Received", message_id=row.message_id),
        "not an SES event at all",
        {"notificationType": "Bounce"},
    ]
    for message in bodies:
        r = await post(ses_svc, sns_server.notification(TOPIC, message))
        assert r.status_code == 200 and r.json() == {"applied": False}, (message, r.text)
    unsubscribed = sns_server.confirmation(TOPIC) | {"Type": "UnsubscribeConfirmation"}
    r = await post(ses_svc, sns_server.signed(unsubscribed))
    assert r.status_code == 200 and r.json() == {"applied": False}, r.text
    after = await row_of(ses_svc, row.id)
    assert (after.outcome, after.detail, after.updated_at) == ("sent", None, row.updated_at)
    assert await suppressions(ses_svc) == []
    assert all("ConfirmSubscription" not in path for path in sns_server.requests)


async def test_received_mail_is_never_touched(ses_svc: Svc, sns_server: SnsServer) -> None:
    row = await sent_row(ses_svc)
    async with ses_svc.ctx.db.transaction(write=True) as s:
        got = await s.get(MailLogEntry, row.id)
        assert got is not None
        got.direction, got.outcome = "in", "received"
    event = ses_event("Bounce", message_id=row.message_id)
    assert (await post(ses_svc, sns_server.notification(TOPIC, event))).json() == {"applied": False}
    assert (await row_of(ses_svc, row.id)).outcome == "received"
    assert await suppressions(ses_svc) == []


async def test_a_certificate_that_cannot_be_fetched_is_502_and_not_kept(ses_svc: Svc, sns_server: SnsServer) -> None:
    """SNS retries on a 5xx: a notification is not lost to an outage, and nothing bad is kept."""
    row = await sent_row(ses_svc)
    body = sns_server.notification(TOPIC, ses_event("Bounce", message_id=row.message_id))
    sns_server.cert_body = b"x" * (64 * 1024)  # more than a certificate
    assert_error(await post(ses_svc, body), 502, "mail_provider_unavailable")
    sns_server.cert_body = b"not a certificate"
    assert_error(await post(ses_svc, body), 403, "bad_signature")
    assert (await row_of(ses_svc, row.id)).outcome == "sent"
    sns_server.cert_body = None
    assert (await post(ses_svc, body)).json() == {"applied": True}
    assert (await row_of(ses_svc, row.id)).outcome == "bounced"


async def test_an_unreachable_certificate_host_is_502(ses_svc: Svc) -> None:
    with SnsServer() as gone:
        gone.trust(ses_svc.ctx)
        body = gone.notification(TOPIC, ses_event("Delivery"))
    # The server is shut: its port refuses the connection.
    assert_error(await post(ses_svc, body), 502, "mail_provider_unavailable")


async def test_a_redirect_is_never_followed(ses_svc: Svc, sns_server: SnsServer) -> None:
    """The host rule holds for every fetch: a redirect could lead anywhere."""
    row = await sent_row(ses_svc)
    with SnsServer() as elsewhere:
        sns_server.cert_redirect = elsewhere.cert_url
        body = sns_server.notification(TOPIC, ses_event("Bounce", message_id=row.message_id))
        assert_error(await post(ses_svc, body), 502, "mail_provider_unavailable")
        assert elsewhere.requests == []
    assert (await row_of(ses_svc, row.id)).outcome == "sent"
