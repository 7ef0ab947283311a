"""Record audit events, and list an org's. Callers pass names and ids only: never a secret or contact data."""

from __future__ import annotations

from typing import Any

from svc.auth.roles import OrgAccess
from svc.domains.audit import queries
from svc.domains.audit.schemas import AuditEvent as AuditEventView
from svc.domains.audit.schemas import AuditEventList, AuditQuery
from svc.kit.clock import utcnow
from svc.kit.cursors import decode_cursor, encode_cursor
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import AuditEvent, Org, User
from svc.uow import UnitOfWork


async def record(session: StoreSession, action: str, *, actor: User | None, org: Org | None,
                 target: str | None = None, data: dict[str, Any] | None = None, by: str | None = None) -> None:
    """`by`: who acted when no signed-in user did, as `provider:subject` (operator:NAME for the
    operator at the server, `svc admin`)."""
    session.add(AuditEvent(
        id=new_id("aud"), at=utcnow(), action=action,
        actor_user_id=actor.id if actor else None,
        actor_subject=f"{actor.provider}:{actor.subject}" if actor else (by[:200] if by else None),
        org_id=org.id if org else None, org_slug=org.slug if org else None,
        target=target, data=data or {},
    ))


async def list_events(uow: UnitOfWork, access: OrgAccess, query: AuditQuery) -> AuditEventList:
    """One page of the org's events, newest first (admins: the caller's access says so)."""
    given = query.cursor or query.before
    before = decode_cursor(given) if given is not None else None
    rows = await queries.page(uow.session, access.org.id, limit=query.limit + 1, before=before,
                              action=query.action, actor=query.actor)
    more = len(rows) > query.limit
    rows = rows[:query.limit]
    cursor = encode_cursor(rows[-1].at, rows[-1].id) if more and rows else None
    return AuditEventList(events=[AuditEventView.of(r) for r in rows], next_cursor=cursor)


async def recorded_actions(uow: UnitOfWork, access: OrgAccess) -> list[str]:
    """The event names the org's trail holds (for a filter's choices)."""
    return await queries.actions(uow.session, access.org.id)
