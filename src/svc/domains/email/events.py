"""The mail provider's notifications (POST /v1/hooks/ses; docs/email.md, "Provider
notifications"): bounces, complaints and deliveries of the mail svc sent, applied to its log.

SNS posts each notification (sns.py verifies it); its Message is an SES notification
(`notificationType`) or an SES event-publishing record (`eventType`), both with a `mail` object
naming the message and a `bounce`, `complaint` or `delivery` object. The message is found by the
Message-ID svc set (`mail.commonHeaders.messageId`, or the Message-ID among `mail.headers`), else by
the id the relay answered when it accepted it (`mail.messageId`, the row's provider_id).

Applying one is idempotent, as SNS delivers at least once: a notification raises a row's outcome
(sent < delivered < bounced < complained), never lowers it, and a suppression is added once. An
unknown type, or a message svc never sent, changes nothing (200: SNS would retry anything else)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from email.utils import getaddresses
from typing import Any

from svc.domains.email import errors, queries, sns
from svc.domains.email.settings import EmailSettings
from svc.kit.clock import utcnow
from svc.models import MailLogEntry, MailOutcome
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.email")

# How far each notification moves a sent message: never backwards (a delivery arriving after the
# bounce of the same message, or a duplicate, changes nothing). A row the relay refused (failed)
# can still be reported: the provider knows better. Received or suppressed rows are never touched.
_RANK: dict[str, int] = {MailOutcome.queued: 0, MailOutcome.sent: 0, MailOutcome.failed: 0, MailOutcome.delivered: 1,
         MailOutcome.bounced: 2, MailOutcome.complained: 3}
_OUTCOME = {"Delivery": MailOutcome.delivered, "Bounce": MailOutcome.bounced, "Complaint": MailOutcome.complained}
# The row's detail keeps this much of the provider's words.
MAX_DETAIL = 1000


@dataclass(frozen=True)
class ProviderEvent:
    """One bounce, complaint or delivery, as svc uses it."""

    kind: str  # Bounce | Complaint | Delivery
    message_id: str | None  # the Message-ID header, without <>
    provider_id: str | None  # the provider's id of the message (mail.messageId)
    # The recipients svc must not send to again (a Permanent bounce's, a complaint's), lower case.
    suppress: tuple[str, ...]
    detail: str


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _bare_id(value: str | None) -> str | None:
    """A Message-ID without its <> (contract 2 of docs/email.md: the row holds it so)."""
    if value is None:
        return None
    return value.strip().removeprefix("<").removesuffix(">").strip() or None


def _header_message_id(mail: dict[str, Any]) -> str | None:
    found = _text(_obj(mail.get("commonHeaders")).get("messageId"))
    if found is None:
        headers = mail.get("headers")
        for header in headers if isinstance(headers, list) else []:
            header = _obj(header)
            if str(header.get("name", "")).lower() == "message-id":
                found = _text(header.get("value"))
                break
    return _bare_id(found)


def _addresses(entries: Any) -> list[str]:
    out = []
    for entry in entries if isinstance(entries, list) else []:
        address = _text(_obj(entry).get("emailAddress"))
        if address is not None:
            out.append(address.lower())
    return out


def read_event(message: str) -> ProviderEvent | None:
    """The event an SNS notification's Message carries; None when it is not a bounce, complaint or
    delivery of SES's (another event type, or not SES's JSON)."""
    try:
        doc = json.loads(message)
    except ValueError:
        return None
    doc = _obj(doc)
    kind = doc.get("notificationType") or doc.get("eventType")
    if kind not in _OUTCOME:
        return None
    mail = _obj(doc.get("mail"))
    suppress: list[str] = []
    if kind == "Bounce":
        bounce = _obj(doc.get("bounce"))
        recipients = bounce.get("bouncedRecipients")
        words = [f"{bounce.get('bounceType', '?')}/{bounce.get('bounceSubType', '?')}"]
        for entry in recipients if isinstance(recipients, list) else []:
            entry = _obj(entry)
            words.append(" ".join(str(entry[k]) for k in ("emailAddress", "status", "diagnosticCode") if entry.get(k)))
        # Only a Permanent bounce says the address will never take mail; Transient (a full mailbox)
        # and Undetermined may pass later.
        if bounce.get("bounceType") == "Permanent":
            suppress = _addresses(recipients)
        detail = "bounce " + "; ".join(words)
    elif kind == "Complaint":
        complaint = _obj(doc.get("complaint"))
        suppress = _addresses(complaint.get("complainedRecipients"))
        feedback = complaint.get("complaintFeedbackType")
        detail = f"complaint{' ' + str(feedback) if feedback else ''}: {', '.join(suppress)}"
    else:
        delivery = _obj(doc.get("delivery"))
        recipients = delivery.get("recipients")
        names = [str(r) for r in recipients] if isinstance(recipients, list) else []
        detail = f"delivered to {', '.join(names)}: {delivery.get('smtpResponse', '')}".rstrip(": ")
    return ProviderEvent(kind=kind, message_id=_header_message_id(mail), provider_id=_text(mail.get("messageId")),
                         suppress=tuple(suppress), detail=detail[:MAX_DETAIL])


def _recipients_of(row: MailLogEntry) -> set[str]:
    return {address.lower() for _, address in getaddresses([row.to_addr]) if address}


async def apply(uow: UnitOfWork, event: ProviderEvent) -> bool:
    """The event on its message's row, and its suppressions; whether anything changed."""
    session = uow.session
    # The provider's own id first: the relay gave it to the one message it took. A Message-ID is the
    # sender's to write (a worker's forward or reply keeps the one it was given), so it decides only
    # when the provider's id finds nothing: one tenant's bounce never lands on another's row by it.
    row = None
    if event.provider_id is not None:
        row = await queries.sent_with_provider_id(session, event.provider_id)
    if row is None and event.message_id is not None:
        row = await queries.sent_with_message_id(session, event.message_id)
    if row is None:
        log.info("SES %s for a message svc did not send (Message-ID %s, id %s): ignored", event.kind,
                 event.message_id, event.provider_id)
        return False
    changed = False
    outcome = _OUTCOME[event.kind]
    current = _RANK.get(row.outcome)
    if current is not None and _RANK[outcome] > current:
        row.outcome, row.detail, row.updated_at = outcome, event.detail, utcnow()
        changed = True
    # Only the message's own recipients: a notification never suppresses an address svc did not
    # send this message to.
    mine = _recipients_of(row)
    suppress = [address for address in event.suppress if address in mine]
    reason = "complained" if event.kind == "Complaint" else "bounced"
    if suppress and await queries.suppress(session, row.project_id, suppress, reason=reason, mail_id=row.id):
        changed = True
    await session.flush()
    return changed


@use_case(Tx.READ_THEN_WRITE)  # the certificate's fetch, or the subscription's GET, before the write
async def receive(uow: UnitOfWork, body: bytes) -> bool:
    """A POST of SNS's: verified (sns.py), then a subscription confirmed or a notification applied
    in one write. Whether the log changed."""
    topic = uow.ctx.settings_of(EmailSettings).mail_topic
    if topic is None:
        raise errors.MailTopicUnset()
    msg = await sns.verified(uow.ctx, body, topic)
    if msg.type == sns.SUBSCRIPTION_CONFIRMATION:
        await sns.confirm_subscription(uow.ctx, msg, topic)
        return False
    if msg.type != sns.NOTIFICATION:
        # An unsubscribe's confirmation: svc does not subscribe again by itself.
        log.info("SNS: %s for %s", msg.type, topic)
        return False
    event = read_event(msg.message)
    if event is None:
        return False
    await uow.begin_write()
    return await apply(uow, event)
