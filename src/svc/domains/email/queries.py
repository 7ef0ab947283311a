"""Email's SQL."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, func, or_, select

from svc.kit.store_session import StoreSession
from svc.models import EmailGrant, MailDirection, MailLogEntry, MailOutcome, Org


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
