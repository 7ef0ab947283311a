"""Email's SQL."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, func, or_, select, update

from svc.db import dialect_insert, lock_rows
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


async def grant_locked(session: StoreSession, project_id: str) -> EmailGrant | None:
    """The grant, held until the transaction ends: sends of one project count their hour one at a
    time, so two cannot both take the last slot."""
    await lock_rows(session, select(EmailGrant.project_id).where(EmailGrant.project_id == project_id))
    return await session.get(EmailGrant, project_id)


async def sent_since(session: StoreSession, project_id: str, since: datetime) -> tuple[int, datetime | None]:
    """Outbound messages counted against the hourly cap since `since` (suppressed ones sent
    nothing), and the oldest one's instant."""
    row = (await session.execute(
        select(func.count(), func.min(MailLogEntry.created_at))
        .where(MailLogEntry.project_id == project_id, MailLogEntry.direction == MailDirection.outbound,
               MailLogEntry.created_at >= since, MailLogEntry.outcome != MailOutcome.suppressed))).one()
    return int(row[0]), row[1]


async def suppressed(session: StoreSession, project_id: str, recipients: list[str]) -> set[str]:
    """Those of `recipients` (lower case) the project may no longer send to."""
    rows = await session.scalars(select(MailSuppression.recipient).where(
        MailSuppression.project_id == project_id, MailSuppression.recipient.in_(recipients)))
    return set(rows.all())


async def queued(session: StoreSession, mail_id: str) -> MailLogEntry | None:
    """An outbound message still waiting for the relay."""
    row = await session.get(MailLogEntry, mail_id)
    ok = row is not None and row.direction == MailDirection.outbound and row.outcome == MailOutcome.queued
    return row if ok else None


async def settle(session: StoreSession, mail_id: str, *, outcome: MailOutcome, at: datetime, attempts: int,
                 provider_id: str | None = None, detail: str | None = None) -> bool:
    """A queued message's outcome from the relay; False when it is no longer queued (pruned, or a
    provider's notification came first)."""
    result = await session.execute(
        update(MailLogEntry).where(MailLogEntry.id == mail_id, MailLogEntry.outcome == MailOutcome.queued)
        .values(outcome=outcome, updated_at=at, attempts=attempts, provider_id=provider_id, detail=detail)
        .execution_options(synchronize_session=False))
    return bool(getattr(result, "rowcount", 0))


async def raw_keys(session: StoreSession, project_id: str) -> list[str]:
    rows = await session.scalars(select(MailLogEntry.raw_key).where(MailLogEntry.project_id == project_id,
                                                                   MailLogEntry.raw_key.is_not(None)))
    return [str(k) for k in rows.all()]
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


async def holders(session: StoreSession, addresses: list[str]) -> dict[str, tuple[str, str]]:
    """The granted addresses among `addresses` (mail domains, lower case): address -> (project
    id, org id). Columns, not rows: read at every RCPT and every received message."""
    rows = await session.execute(select(EmailGrant.address, EmailGrant.project_id, EmailGrant.org_id)
                                 .where(EmailGrant.address.in_(addresses)))
    return {address: (project_id, org_id) for address, project_id, org_id in rows.all()}


async def stored_before(session: StoreSession, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of (project id, dedupe key) the log holds already (a sender's retry)."""
    if not keys:
        return set()
    rows = await session.execute(select(MailLogEntry.project_id, MailLogEntry.dedupe_key)
                                 .where(MailLogEntry.project_id.in_({p for p, _ in keys}),
                                        MailLogEntry.dedupe_key.in_({k for _, k in keys})))
    wanted = set(keys)
    return {(p, k) for p, k in rows.all() if k is not None and (p, k) in wanted}
