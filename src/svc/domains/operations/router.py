"""HTTP only: GET /v1/orgs/{orgSlug}/operations/{opId}, the phases of a long-running operation."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from svc.auth.roles import ViewerAccess
from svc.deps import Uow, api_router
from svc.domains.operations import service
from svc.domains.operations.schemas import Operation as OperationView

router = api_router(tags=["projects"])


@router.get("/v1/orgs/{orgSlug}/operations/{opId}", response_model=OperationView, operation_id="getOperation")
async def get_operation(op_id: Annotated[str, Path(alias="opId", max_length=64)], access: ViewerAccess,
                        uow: Uow) -> OperationView:
    return OperationView.model_validate(await service.get_operation(uow, access, op_id))
