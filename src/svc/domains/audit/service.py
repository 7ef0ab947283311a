"""Record audit events. Callers pass names and ids only: never a secret or contact data."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import AuditEvent, Org, User


async def record(session: AsyncSession, action: str, *, actor: User | None, org: Org | None,
                 target: str | None = None, data: dict[str, Any] | None = None) -> None:
    session.add(AuditEvent(
        id=new_id("aud"), at=utcnow(), action=action,
        actor_user_id=actor.id if actor else None,
        actor_subject=f"{actor.provider}:{actor.subject}" if actor else None,
        org_id=org.id if org else None, org_slug=org.slug if org else None,
        target=target, data=data or {},
    ))
