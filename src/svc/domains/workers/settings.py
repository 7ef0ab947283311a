"""The workers area's settings (SVC_LOG_RETENTION_HOURS, SVC_TRAFFIC_RETENTION_DAYS)."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class WorkerSettings(AreaSettings):
    # How long a project's log lines are kept (its worker's output and exceptions).
    log_retention_hours: int = Field(default=72, ge=1, le=24 * 90)
    # How long the per-minute traffic counts are kept (the Overview's chart shows the last 24 h).
    traffic_retention_days: int = Field(default=30, ge=1, le=3650)
