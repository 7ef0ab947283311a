"""The storage area's own settings."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class StorageSettings(AreaSettings):
    # Seconds between two counts of every granted project's objects in the object store (the
    # usedBytes the status shows; svc's own writes count at once in between).
    storage_usage_seconds: float = Field(default=300.0, gt=0)
