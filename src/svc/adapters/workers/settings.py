"""The worker runtime's settings (workerd: docs/workers.md)."""

from __future__ import annotations

from pydantic import Field

from svc.settings import ComponentSettings


class WorkerRuntimeSettings(ComponentSettings):
    # How many serving processes (shards) run the projects' workers.
    worker_processes: int = Field(default=2, ge=1, le=64)
    # How long a worker may take to start answering a request before the edge answers 500, in seconds.
    worker_timeout_seconds: int = Field(default=30, ge=1, le=900)
    # One worker isolate's memory (V8 heap), in MB.
    worker_memory_mb: int = Field(default=128, ge=16, le=8192)
    # The workerd to run (a name on PATH or a path); unset: the one on PATH or `make setup`'s.
    workerd_binary: str | None = None
    # Who workerd runs as when svc runs as root.
    worker_user: str = "nobody"
