"""The workers area's settings (SVC_LOG_RETENTION_HOURS)."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class WorkerSettings(AreaSettings):
    # How long a project's log lines are kept (its worker's output and exceptions).
    log_retention_hours: int = Field(default=72, ge=1, le=24 * 90)
