"""SQL for invites."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CursorResult, func, select, update

from svc.kit.store_session import StoreSession
from svc.models import Invite, InviteState, Membership, Org, User


async def in_org(session: StoreSession, org_id: str, invite_id: str) -> Invite | None:
    return (await session.scalars(select(Invite).where(Invite.id == invite_id, Invite.org_id == org_id))).first()


async def by_email(session: StoreSession, org_id: str, email: str) -> Invite | None:
    return (await session.scalars(select(Invite).where(Invite.org_id == org_id, Invite.email == email))).first()


async def by_token_hash(session: StoreSession, digest: str) -> tuple[Invite, Org] | None:
    row = (await session.execute(
        select(Invite, Org).join(Org, Org.id == Invite.org_id).where(Invite.token_hash == digest)
        .execution_options(populate_existing=True))).first()
    return (row[0], row[1]) if row else None


async def pending(session: StoreSession, org_id: str) -> list[Invite]:
    """Pending rows, expired ones included (they stay listed)."""
    rows = await session.scalars(
        select(Invite).where(Invite.org_id == org_id, Invite.state == InviteState.pending)
        .order_by(Invite.created_at, Invite.id))
    return list(rows.all())


async def live_count(session: StoreSession, org_id: str, now: datetime) -> int:
    """Pending invites that have not expired: what the pending-invite cap counts."""
    return int(await session.scalar(
        select(func.count()).select_from(Invite)
        .where(Invite.org_id == org_id, Invite.state == InviteState.pending, Invite.expires_at > now)) or 0)


async def member_has_email(session: StoreSession, org_id: str, email: str) -> bool:
    """Whether a member's account carries this (normalized, lowercase) address."""
    found = await session.scalar(
        select(Membership.user_id).join(User, User.id == Membership.user_id)
        .where(Membership.org_id == org_id, func.lower(func.trim(User.email)) == email).limit(1))
    return found is not None


async def consume(session: StoreSession, invite_id: str, digest: str, user_id: str, now: datetime) -> bool:
    """Single use under concurrency: only one conditional UPDATE finds the row still pending (and
    still holding this token: a concurrent re-invite replaces it)."""
    result = await session.execute(
        update(Invite).where(Invite.id == invite_id, Invite.token_hash == digest, Invite.state == InviteState.pending,
                             Invite.expires_at > now)
        .values(state=InviteState.used, accepted_by=user_id, finished_at=now)
        .execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    return result.rowcount == 1


async def revoke(session: StoreSession, invite_id: str, now: datetime) -> bool:
    result = await session.execute(
        update(Invite).where(Invite.id == invite_id, Invite.state == InviteState.pending)
        .values(state=InviteState.revoked, finished_at=now).execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    return result.rowcount == 1


async def state_of(session: StoreSession, invite_id: str, digest: str) -> tuple[str, datetime] | None:
    """The committed state, read after a failed conditional UPDATE (not the session's cached row)."""
    row = (await session.execute(select(Invite.state, Invite.expires_at)
                                 .where(Invite.id == invite_id, Invite.token_hash == digest))).first()
    return (row[0], row[1]) if row else None
