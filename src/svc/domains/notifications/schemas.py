from __future__ import annotations

from typing import Any

from svc.kit.api import ApiModel, Timestamp


class Notification(ApiModel):
    id: str
    kind: str
    message: str
    project: str | None
    data: dict[str, Any]
    created_at: Timestamp
    sent_at: Timestamp | None


class NotificationList(ApiModel):
    notifications: list[Notification]
