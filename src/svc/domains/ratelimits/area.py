"""The ratelimits area: counters that slow down guessing (passwords of protected projects)."""

from __future__ import annotations

from svc.manifest import Area

AREA = Area(name="ratelimits")
