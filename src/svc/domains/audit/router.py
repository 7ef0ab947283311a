"""HTTP only: the org's audit trail (admins), newest first, paged by cursor."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from svc.auth.roles import AdminAccess
from svc.deps import Uow, api_router
from svc.domains.audit import schemas, service

router = api_router(tags=["orgs"])


@router.get("/v1/orgs/{orgSlug}/audit", response_model=schemas.AuditEventList, operation_id="listAuditEvents")
async def list_audit_events(access: AdminAccess, uow: Uow,
                            query: Annotated[schemas.AuditQuery, Query()]) -> schemas.AuditEventList:
    return await service.list_events(uow, access, query)
