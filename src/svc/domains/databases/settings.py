"""The databases area's settings (generations: their cycle and retention; the watchdog's turn)."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class DatabaseSettings(AreaSettings):
    # The change checks' grid: a generation is taken when a database changed since its last one.
    database_backup_seconds: float = Field(default=3600.0, ge=1.0, le=7 * 24 * 3600)
    # Retention: the newest scheduled generations kept (then the newest of each of
    # SVC_DATABASE_KEEP_DAILY days). The final generation of a deleted database and exports are
    # never pruned.
    database_keep_hourly: int = Field(default=24, ge=1, le=24 * 90)
    # Retention: the days whose newest scheduled generation is kept, after the hourly ones.
    database_keep_daily: int = Field(default=7, ge=0, le=3650)
    # The watchdog's turn (watchdog.py): how late past its plan's bound a statement is cancelled, an
    # idle transaction ended, an expired token user's sessions ended and the user dropped.
    database_watchdog_seconds: float = Field(default=10.0, ge=1.0, le=60.0)
