"""The kinds of job of the storage area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class StorageJob(StrEnum):
    # The cycle that counts each granted prefix in the object store (usedBytes, reportedAt) and
    # releases the quota reservations of writes a crashed process left in flight.
    usage_cycle = "storage.usage_cycle"
