"""The DNS area's own rules."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class DnsSettings(AreaSettings):
    # How long a zone's delegation check stays fresh: the cycle checks again those older than this.
    delegation_recheck_seconds: float = Field(default=600.0, gt=0)
