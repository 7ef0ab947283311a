"""The views of an operation: the one a route starts, and its phases as they go."""

from __future__ import annotations

from svc.kit.api import ApiModel, Timestamp


class OperationStarted(ApiModel):
    operation_id: str


class Operation(ApiModel):
    id: str
    project_id: str
    kind: str
    phase: str
    terminal_code: str | None
    created_at: Timestamp
    finished_at: Timestamp | None
