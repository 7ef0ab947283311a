"""The identity area's own rules."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class IdentitySettings(AreaSettings):
    # How long a dashboard or CLI session lasts, in days.
    session_days: int = Field(default=30, ge=1, le=365)
