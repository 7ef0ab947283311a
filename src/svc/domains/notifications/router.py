from __future__ import annotations

from typing import Annotated

from fastapi import Query

from svc.auth.roles import ViewerAccess
from svc.deps import Uow, api_router
from svc.domains.notifications import service
from svc.domains.notifications.schemas import Notification, NotificationList

router = api_router(tags=["orgs"])


@router.get("/v1/orgs/{orgSlug}/notifications", response_model=NotificationList,
            operation_id="listNotifications")
async def list_notifications(access: ViewerAccess, uow: Uow,
                             limit: Annotated[int, Query(ge=1, le=200)] = 50) -> NotificationList:
    rows = await service.latest(uow, access.org.id, limit)
    return NotificationList(notifications=[Notification.model_validate(r) for r in rows])
