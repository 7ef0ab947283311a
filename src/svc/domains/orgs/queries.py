"""SQL for orgs and memberships."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, bindparam, func, select

from svc.context import OrgHolding
from svc.db import lock_rows, plain_rows
from svc.kit.store_session import StoreSession
from svc.models import Membership, Org, Role, User


async def lock_org(session: StoreSession, org_id: str) -> None:
    """Serialise rule checks that span rows of one org (last admin, project limit).
    PostgreSQL: a row lock; SQLite: write transactions are already serial (BEGIN IMMEDIATE)."""
    await lock_rows(session, select(Org.id).where(Org.id == org_id))


async def user_by_identity(session: StoreSession, provider: str, subject: str) -> User | None:
    """The account of a person who has signed in before (to add them as a member)."""
    return (await session.scalars(select(User).where(User.provider == provider, User.subject == subject))).first()


async def org_by_slug(session: StoreSession, slug: str) -> Org | None:
    return (await session.scalars(select(Org).where(Org.slug == slug))).first()


# The read paths every dashboard page takes are built once (building a statement costs more than
# running it on SQLite).
_MEMBERSHIPS_OF = (
    select(Org, Membership.role).join(Membership, Membership.org_id == Org.id)
    .where(Membership.user_id == bindparam("user_id")).order_by(Org.personal.desc(), Org.slug))
# Table columns, not ORM attributes: a Core statement skips the ORM's result processing.
_U, _M = User.__table__.c, Membership.__table__.c
_MEMBERS = (
    select(_U.id, _U.provider, _U.subject, _U.email, _U.name, _M.role, _M.created_at.label("joined_at"))
    .join(User.__table__, _U.id == _M.user_id)
    .where(_M.org_id == bindparam("org_id")).order_by(_M.created_at, _U.id))


async def memberships_of(session: StoreSession, user_id: str) -> list[tuple[Org, str]]:
    rows = await session.execute(_MEMBERSHIPS_OF, {"user_id": user_id})
    return [(org, role) for org, role in rows.all()]


async def members(session: StoreSession, org_id: str) -> Sequence[Row[*tuple[Any, ...]]]:
    """Plain rows, no ORM objects: this is the hottest read of a dashboard."""
    # A named hot path (docs/architecture.md, "The store"): plain_rows reads the list in 33-42 us of
    # CPU against 92-115 us through the session on SQLite, 2.7-2.8x (bench/store.py, orgs.members,
    # two runs); a whole `GET /v1/orgs/{org}/members` cost the server 0.45-0.50 ms of CPU against
    # 0.61-0.71 ms with the list read through the session (bench/api.py, three runs each,
    # alternated). On PostgreSQL plain_rows is the session's execute.
    return await plain_rows(session, _MEMBERS, {"org_id": org_id})


async def membership(session: StoreSession, org_id: str, user_id: str) -> Membership | None:
    return await session.get(Membership, (org_id, user_id))


async def role_in(session: StoreSession, org_id: str, user_id: str) -> str | None:
    """The user's role in the org, or None when not a member (the one membership lookup that
    needs no ORM object: the edge's check runs it on every org-mode request)."""
    return await session.scalar(
        select(Membership.role).where(Membership.org_id == org_id, Membership.user_id == user_id))


async def admin_count(session: StoreSession, org_id: str) -> int:
    return int(await session.scalar(
        select(func.count()).select_from(Membership)
        .where(Membership.org_id == org_id, Membership.role == Role.admin)) or 0)


async def holding(session: StoreSession, held: OrgHolding, org_id: str, *, names: int) -> tuple[int, list[str]]:
    """How many rows of what an area declares an org holds (its manifest's holdings), and the first
    few of their names."""
    model = held.model
    owned = model.__table__.c.org_id == org_id  # type: ignore[attr-defined]
    count = int(await session.scalar(select(func.count()).select_from(model).where(owned)) or 0)
    if not count:
        return 0, []
    shown = (await session.scalars(select(held.name).where(owned).order_by(held.name).limit(names))).all()
    return count, list(shown)
