"""GET /v1/orgs/{orgSlug}/operations/{opId}: the phases of a long-running operation."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from svc.auth.roles import ViewerAccess
from svc.deps import Session, api_router
from svc.domains.projects.schemas import Operation as OperationView
from svc.errors import NotFound
from svc.models import Operation

router = api_router(tags=["projects"])


class OperationNotFound(NotFound):
    default_message = "No such operation"




@router.get("/v1/orgs/{orgSlug}/operations/{opId}", response_model=OperationView, operation_id="getOperation")
async def get_operation(op_id: Annotated[str, Path(alias="opId", max_length=64)], access: ViewerAccess,
                        session: Session) -> OperationView:
    op = await session.get(Operation, op_id)
    if op is None or op.org_id != access.org.id:
        raise OperationNotFound()
    return OperationView.model_validate(op)
