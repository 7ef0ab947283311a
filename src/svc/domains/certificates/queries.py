"""SQL for certificates."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, and_, delete, func, select

from svc.kit.store_session import StoreSession
from svc.models import AcmeAccount, AcmeChallenge, Certificate, Hostname, HostnameKind, HostnameStatus, Org, Project


async def account(session: StoreSession, directory_url: str) -> AcmeAccount | None:
    return await session.get(AcmeAccount, directory_url)


async def certificate(session: StoreSession, name: str, *, lock: bool = False) -> Certificate | None:
    return await session.get(Certificate, name, with_for_update=lock)


async def certificates(session: StoreSession) -> list[Certificate]:
    return list((await session.scalars(select(Certificate).order_by(Certificate.name))).all())


async def active_custom_hosts(session: StoreSession) -> list[str]:
    return list((await session.scalars(select(Hostname.host).where(
        Hostname.kind == HostnameKind.custom, Hostname.status == HostnameStatus.active))).all())


async def default_hosts(session: StoreSession) -> list[str]:
    return list((await session.scalars(select(Hostname.host).where(Hostname.kind == HostnameKind.default))).all())


async def is_active_custom_host(session: StoreSession, host: str) -> bool:
    row = await session.get(Hostname, host)
    return row is not None and row.kind == HostnameKind.custom and row.status == HostnameStatus.active


async def due(session: StoreSession, now: datetime) -> list[Certificate]:
    return list((await session.scalars(select(Certificate).where(Certificate.renew_at <= now))).all())


async def challenge(session: StoreSession, token: str) -> AcmeChallenge | None:
    return await session.get(AcmeChallenge, token)


async def drop_challenge(session: StoreSession, token: str) -> None:
    await session.execute(delete(AcmeChallenge).where(AcmeChallenge.token == token))


def _servable(now: datetime) -> ColumnElement[bool]:
    """A chain not past its notAfter (a failed renewal keeps serving the one it has until then)."""
    return and_(Certificate.fullchain.is_not(None), Certificate.not_after.is_not(None), Certificate.not_after > now)


async def served(session: StoreSession, now: datetime) -> list[Certificate]:
    return list((await session.scalars(select(Certificate).where(_servable(now)).order_by(Certificate.name))).all())


async def served_version(session: StoreSession, now: datetime) -> str:
    """Moves when a served certificate changes, comes or runs out (the count drops)."""
    row = (await session.execute(select(func.count(), func.max(Certificate.updated_at)).where(_servable(now)))).one()
    return f"{row[0]}:{row[1].isoformat() if row[1] else ''}"


async def named(session: StoreSession, names: list[str]) -> list[Certificate]:
    if not names:
        return []
    return list((await session.scalars(select(Certificate).where(Certificate.name.in_(names)))).all())


async def host_owner(session: StoreSession, host: str) -> tuple[Org, str] | None:
    """The org and project a custom hostname belongs to (whom to tell about its certificate)."""
    row = (await session.execute(select(Org, Project.name).join(Project, Project.org_id == Org.id)
                                 .join(Hostname, Hostname.project_id == Project.id)
                                 .where(Hostname.host == host, Hostname.kind == HostnameKind.custom))).first()
    return (row[0], row[1]) if row is not None else None


async def ocsp_due(session: StoreSession, now: datetime) -> list[Certificate]:
    """Certificates whose OCSP answer is to be asked for (again)."""
    return list((await session.scalars(select(Certificate).where(
        Certificate.ocsp_refresh_at.is_not(None), Certificate.ocsp_refresh_at <= now))).all())


async def expiring(session: StoreSession, before: datetime) -> list[Certificate]:
    """Certificates with a chain that runs out before `before` (the expired ones included)."""
    return list((await session.scalars(select(Certificate).where(
        Certificate.fullchain.is_not(None), Certificate.not_after.is_not(None), Certificate.not_after < before)
        .with_for_update())).all())
