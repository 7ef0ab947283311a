"""Shared steps of the invite tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from svc.kit.clock import utcnow
from svc.models import AuditEvent, Invite
from tests.support.api import Svc, User


async def org_with_admin(svc: Svc, slug: str = "acme", *, admin: str = "alice") -> User:
    user = await svc.login(admin, name=f"{admin.title()} Admin", email=f"{admin}@example.com")
    r = await user.client.post("/v1/orgs", json={"slug": slug, "name": f"{slug.title()} Inc"})
    assert r.status_code == 201, r.text
    return user


async def invite(admin: User, email: str, role: str = "member", org: str = "acme",
                 status: int = 201) -> dict[str, Any]:
    r = await admin.client.post(f"/v1/orgs/{org}/invites", json={"email": email, "role": role})
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    return body


async def listed(admin: User, org: str = "acme") -> list[dict[str, Any]]:
    r = await admin.client.get(f"/v1/orgs/{org}/invites")
    assert r.status_code == 200, r.text
    invites: list[dict[str, Any]] = r.json()["invites"]
    return invites


async def expire(svc: Svc, invite_id: str) -> None:
    """Move the invite's expiry into the past, as if its 7 days had gone by."""
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Invite).where(Invite.id == invite_id)
                        .values(expires_at=utcnow() - timedelta(seconds=1)))


async def audit_rows(svc: Svc, *actions: str) -> list[AuditEvent]:
    async with svc.ctx.db.transaction(write=False) as s:
        query = select(AuditEvent).order_by(AuditEvent.at, AuditEvent.id)
        if actions:
            query = query.where(AuditEvent.action.in_(actions))
        return list((await s.scalars(query)).all())
