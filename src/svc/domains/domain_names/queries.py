"""SQL of the domains area."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from svc.kit.store_session import StoreSession
from svc.models import Domain, DomainEvent, DomainRenewal, DomainSource, DomainStatus

HISTORY_SHOWN = 50


async def by_name(session: StoreSession, name: str, *, lock: bool = False) -> Domain | None:
    query = select(Domain).where(Domain.name == name)
    if lock:
        query = query.with_for_update()
    return (await session.scalars(query)).first()


async def by_id(session: StoreSession, domain_id: str, *, lock: bool = False) -> Domain | None:
    query = select(Domain).where(Domain.id == domain_id)
    if lock:
        query = query.with_for_update()
    return (await session.scalars(query)).first()


async def refunds_owed(session: StoreSession, limit: int) -> list[str]:
    """Ids of purchases whose registration was refused for good and whose refund has not happened."""
    return list((await session.scalars(select(Domain.id).where(Domain.status == DomainStatus.registering,
                                                               Domain.refund_due.is_not(None))
                                       .order_by(Domain.updated_at).limit(limit))).all())


async def renewal(session: StoreSession, renewal_id: str) -> DomainRenewal | None:
    return await session.get(DomainRenewal, renewal_id)


async def renewal_by_request(session: StoreSession, domain_id: str, request_key: str) -> DomainRenewal | None:
    return (await session.scalars(select(DomainRenewal).where(DomainRenewal.domain_id == domain_id,
                                                              DomainRenewal.request_key == request_key))).first()


async def pending_renewal(session: StoreSession, domain_id: str) -> DomainRenewal | None:
    """The domain's unfinished renewal (at most one: they are started with the domain's row locked)."""
    return (await session.scalars(select(DomainRenewal).where(DomainRenewal.domain_id == domain_id,
                                                              DomainRenewal.status == "pending"))).first()


async def of_org(session: StoreSession, org_id: str) -> list[Domain]:
    return list((await session.scalars(select(Domain).where(Domain.org_id == org_id).order_by(Domain.name))).all())


async def history(session: StoreSession, domain_id: str, limit: int = HISTORY_SHOWN) -> list[DomainEvent]:
    """The most recent lines, newest first."""
    return list((await session.scalars(select(DomainEvent).where(DomainEvent.domain_id == domain_id)
                                       .order_by(DomainEvent.id.desc()).limit(limit))).all())


async def sync_due(session: StoreSession, before: datetime, limit: int) -> list[tuple[str, str]]:
    """(id, name) of purchased domains the registrar was last asked of before `before`, oldest first."""
    rows = await session.execute(
        select(Domain.id, Domain.name)
        .where(Domain.source == DomainSource.purchase,
               Domain.status.in_([DomainStatus.active, DomainStatus.expired]),
               (Domain.synced_at.is_(None)) | (Domain.synced_at < before))
        .order_by(Domain.synced_at.is_not(None), Domain.synced_at).limit(limit))
    return [(i, n) for i, n in rows.all()]


async def expiring(session: StoreSession, before: datetime) -> list[Domain]:
    """Active purchased domains expiring before `before`, locked for the notice."""
    return list((await session.scalars(
        select(Domain).where(Domain.source == DomainSource.purchase, Domain.status == DomainStatus.active,
                             Domain.auto_renew.is_(False), Domain.expires_at.is_not(None),
                             Domain.expires_at < before).with_for_update())).all())
