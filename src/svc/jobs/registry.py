"""What job kinds exist and which cycles run periodically. Each area registers its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from svc.context import AppContext


@dataclass
class JobRun:
    """One attempt at a job. `session` is the transaction that also marks the job done, so the
    handler's own state changes commit exactly when the job does. Do slow outside work (SMTP,
    HTTP) before touching `session`: on SQLite the first statement takes the write lock."""

    ctx: AppContext
    job_id: str
    kind: str
    payload: dict[str, Any]
    attempt: int
    session: AsyncSession


JobHandler = Callable[[JobRun], Awaitable[None]]


@dataclass(frozen=True)
class CycleSpec:
    name: str
    interval_seconds: float
    kind: str


@dataclass
class JobRegistry:
    handlers: dict[str, JobHandler] = field(default_factory=dict)
    cycles: dict[str, CycleSpec] = field(default_factory=dict)

    def handler(self, kind: str, fn: JobHandler) -> None:
        if kind in self.handlers:
            raise ValueError(f"job kind {kind!r} registered twice")
        self.handlers[kind] = fn

    def cycle(self, name: str, interval_seconds: float, fn: JobHandler) -> None:
        """A periodic cycle is a job kind enqueued once per slot, whichever process claims the slot."""
        kind = f"cycle.{name}"
        self.handler(kind, fn)
        self.cycles[name] = CycleSpec(name=name, interval_seconds=interval_seconds, kind=kind)
