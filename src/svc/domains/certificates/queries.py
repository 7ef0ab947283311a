"""SQL for certificates."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, select

from svc.kit.store_session import StoreSession
from svc.models import AcmeAccount, AcmeChallenge, Certificate, Hostname, HostnameKind, HostnameStatus


async def account(session: StoreSession, directory_url: str) -> AcmeAccount | None:
    return await session.get(AcmeAccount, directory_url)


async def certificate(session: StoreSession, name: str, *, lock: bool = False) -> Certificate | None:
    return await session.get(Certificate, name, with_for_update=lock)


async def certificates(session: StoreSession) -> list[Certificate]:
    return list((await session.scalars(select(Certificate).order_by(Certificate.name))).all())


async def active_custom_hosts(session: StoreSession) -> list[str]:
    return list((await session.scalars(select(Hostname.host).where(
        Hostname.kind == HostnameKind.custom, Hostname.status == HostnameStatus.active))).all())


async def is_active_custom_host(session: StoreSession, host: str) -> bool:
    row = await session.get(Hostname, host)
    return row is not None and row.kind == HostnameKind.custom and row.status == HostnameStatus.active


async def due(session: StoreSession, now: datetime) -> list[Certificate]:
    return list((await session.scalars(select(Certificate).where(Certificate.renew_at <= now))).all())


async def challenge(session: StoreSession, token: str) -> AcmeChallenge | None:
    return await session.get(AcmeChallenge, token)


async def drop_challenge(session: StoreSession, token: str) -> None:
    await session.execute(delete(AcmeChallenge).where(AcmeChallenge.token == token))


async def served(session: StoreSession) -> list[Certificate]:
    """The certificates with a chain (a failed renewal keeps serving the one it has)."""
    return list((await session.scalars(select(Certificate).where(Certificate.fullchain.is_not(None))
                                       .order_by(Certificate.name))).all())


async def served_version(session: StoreSession) -> str:
    row = (await session.execute(select(func.count(), func.max(Certificate.updated_at))
                                 .where(Certificate.fullchain.is_not(None)))).one()
    return f"{row[0]}:{row[1].isoformat() if row[1] else ''}"


async def named(session: StoreSession, names: list[str]) -> list[Certificate]:
    if not names:
        return []
    return list((await session.scalars(select(Certificate).where(Certificate.name.in_(names)))).all())
