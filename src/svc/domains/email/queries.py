"""Email's SQL."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, func, or_, select

from svc.db import dialect_insert
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import EmailGrant, MailDirection, MailLogEntry, MailOutcome, MailSuppression, Org


async def grant(session: StoreSession, project_id: str) -> EmailGrant | None:
    return await session.get(EmailGrant, project_id)


async def grant_at(session: StoreSession, address: str) -> EmailGrant | None:
    """The grant holding `address` (a mail domain, lower case), whichever project has it."""
    return (await session.scalars(select(EmailGrant).where(EmailGrant.address == address))).first()


async def remove_grant(session: StoreSession, project_id: str) -> bool:
    result = await session.execute(delete(EmailGrant).where(EmailGrant.project_id == project_id))
    return bool(getattr(result, "rowcount", 0))


async def counts_since(session: StoreSession, project_id: str, since: datetime) -> dict[str, int]:
    """Messages by direction since `since` (sent: what went to the relay or waits for it)."""
    rows = await session.execute(
        select(MailLogEntry.direction, func.count())
        .where(MailLogEntry.project_id == project_id, MailLogEntry.created_at >= since,
               MailLogEntry.outcome != MailOutcome.suppressed)
        .group_by(MailLogEntry.direction))
    return {str(direction): int(n) for direction, n in rows.all()}


async def page(session: StoreSession, project_id: str, *, direction: str | None, limit: int,
               before: tuple[datetime, str] | None) -> list[MailLogEntry]:
    """The project's messages, newest first (instant, then id); older than `before` when given."""
    stmt = select(MailLogEntry).where(MailLogEntry.project_id == project_id)
    if direction:
        stmt = stmt.where(MailLogEntry.direction == MailDirection(direction))
    if before is not None:
        at, mail_id = before
        stmt = stmt.where(or_(MailLogEntry.created_at < at,
                              and_(MailLogEntry.created_at == at, MailLogEntry.id < mail_id)))
    stmt = stmt.order_by(MailLogEntry.created_at.desc(), MailLogEntry.id.desc()).limit(limit)
    return list((await session.scalars(stmt)).all())


async def entry(session: StoreSession, project_id: str, mail_id: str) -> MailLogEntry | None:
    row = await session.get(MailLogEntry, mail_id)
    return row if row is not None and row.project_id == project_id else None


async def expired(session: StoreSession, plan: str, older_than: datetime, limit: int) -> list[MailLogEntry]:
    """Rows of orgs on `plan` older than `older_than` (their keepDays), oldest first."""
    stmt = (select(MailLogEntry).join(Org, Org.id == MailLogEntry.org_id)
            .where(Org.plan == plan, MailLogEntry.created_at < older_than)
            .order_by(MailLogEntry.created_at).limit(limit))
    return list((await session.scalars(stmt)).all())


async def delete_entries(session: StoreSession, ids: list[str]) -> None:
    if ids:
        await session.execute(delete(MailLogEntry).where(MailLogEntry.id.in_(ids)))


# The provider's notifications (events.py): the sent message they name, held while they apply.

async def sent_with_message_id(session: StoreSession, message_id: str) -> MailLogEntry | None:
    stmt = (select(MailLogEntry).where(MailLogEntry.message_id == message_id,
                                       MailLogEntry.direction == MailDirection.outbound)
            .limit(1).with_for_update())
    return (await session.scalars(stmt)).first()


async def sent_with_provider_id(session: StoreSession, provider_id: str) -> MailLogEntry | None:
    stmt = (select(MailLogEntry).where(MailLogEntry.provider_id == provider_id,
                                       MailLogEntry.direction == MailDirection.outbound)
            .limit(1).with_for_update())
    return (await session.scalars(stmt)).first()


async def suppress(session: StoreSession, project_id: str, recipients: list[str], *, reason: str,
                   mail_id: str) -> bool:
    """The recipients suppressed for the project, those already suppressed left as they are;
    whether any was added."""
    now = utcnow()
    stmt = (dialect_insert(session, MailSuppression.__table__)
            .values([{"project_id": project_id, "recipient": r, "reason": reason, "mail_id": mail_id,
                      "created_at": now} for r in dict.fromkeys(recipients)])
            .on_conflict_do_nothing(index_elements=["project_id", "recipient"]))
    result = await session.execute(stmt)
    return bool(getattr(result, "rowcount", 0))
