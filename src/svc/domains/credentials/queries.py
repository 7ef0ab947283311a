"""SQL for access tokens and SSH keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, or_, select

from svc.db import lock_rows
from svc.kit.store_session import StoreSession
from svc.models import AccessToken, Membership, Org, Project, ProjectState, SSHKey, User


async def lock_user(session: StoreSession, user_id: str) -> None:
    """Serialise per-user cap checks. PostgreSQL: a row lock; SQLite: write transactions are
    already serial (BEGIN IMMEDIATE)."""
    await lock_rows(session, select(User.id).where(User.id == user_id))


async def tokens_of(session: StoreSession, user_id: str) -> list[tuple[AccessToken, str | None, str | None]]:
    """The user's tokens, each with the org slug and name of the project it is limited to (as they
    are now), or two Nones."""
    rows = await session.execute(
        select(AccessToken, Org.slug, Project.name)
        .outerjoin(Project, Project.id == AccessToken.project_id).outerjoin(Org, Org.id == Project.org_id)
        .where(AccessToken.user_id == user_id)
        .order_by(AccessToken.created_at, AccessToken.id))
    return [(token, org, project) for token, org, project in rows.all()]


async def projects_of_member(session: StoreSession, user_id: str) -> list[tuple[str, str]]:
    """(org slug, project name) of the active projects of every org the user is a member of."""
    rows = await session.execute(
        select(Org.slug, Project.name).join(Project, Project.org_id == Org.id)
        .join(Membership, (Membership.org_id == Org.id) & (Membership.user_id == user_id))
        .where(Project.state == ProjectState.active).order_by(Org.slug, Project.name))
    return [(org, name) for org, name in rows.all()]


async def token_of(session: StoreSession, user_id: str, token_id: str) -> AccessToken | None:
    return (await session.scalars(
        select(AccessToken).where(AccessToken.id == token_id, AccessToken.user_id == user_id))).first()


async def active_token_count(session: StoreSession, user_id: str, now: datetime) -> int:
    return int(await session.scalar(
        select(func.count()).select_from(AccessToken)
        .where(AccessToken.user_id == user_id, AccessToken.revoked_at.is_(None),
               or_(AccessToken.expires_at.is_(None), AccessToken.expires_at > now))) or 0)


async def keys_of(session: StoreSession, user_id: str) -> list[SSHKey]:
    rows = await session.scalars(
        select(SSHKey).where(SSHKey.user_id == user_id).order_by(SSHKey.created_at, SSHKey.id))
    return list(rows.all())


async def key_of(session: StoreSession, user_id: str, key_id: str) -> SSHKey | None:
    return (await session.scalars(
        select(SSHKey).where(SSHKey.id == key_id, SSHKey.user_id == user_id))).first()


async def key_by_fingerprint(session: StoreSession, fingerprint: str) -> SSHKey | None:
    return (await session.scalars(select(SSHKey).where(SSHKey.fingerprint == fingerprint))).first()


async def key_count(session: StoreSession, user_id: str) -> int:
    return int(await session.scalar(
        select(func.count()).select_from(SSHKey).where(SSHKey.user_id == user_id)) or 0)
