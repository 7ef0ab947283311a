from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class Job(Base):
    """The outbox: written in the same transaction as the state change that needs it."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_due", "status", "run_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]]
    # queued | running | done | failed
    status: Mapped[str] = mapped_column(String(16))
    # Unique while set, so a cycle slot or a once-only job is enqueued once across processes.
    dedupe_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    run_at: Mapped[datetime]
    attempts: Mapped[int] = mapped_column(default=0)
    max_attempts: Mapped[int]
    locked_by: Mapped[str | None] = mapped_column(String(100))
    locked_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class Cycle(Base):
    """A periodic cycle's schedule; claiming a due slot is one conditional UPDATE, so one process wins."""

    __tablename__ = "cycles"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    next_run_at: Mapped[datetime]
    last_run_at: Mapped[datetime | None]
