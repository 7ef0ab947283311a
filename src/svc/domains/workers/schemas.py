"""What the worker runtime reads of svc (GET /v1/runtime/workers/{key}) and sends it (log lines)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from svc.kit.api import ApiInput, ApiModel, Timestamp

# A project's id in the runtime's routes (/v1/runtime/projects/{projectId}/...): every area's.
RUNTIME_PROJECT_ID = r"^[A-Za-z0-9_-]{1,40}$"
# `?request=` of the logs (API and dashboard): a request id as the edge and the runtime write them,
# or the end of one that people are shown (kit/ids.py short_request_id).
REQUEST_ID = r"^[A-Za-z0-9._:-]{1,64}$"


class RuntimeWorker(ApiModel):
    """A worker as the dispatcher loads it (adapters/workers/dispatcher.js): its modules, its
    compatibility date, its env (bindings by name) and its assets directory under the sites."""

    project: str
    main_module: str
    modules: dict[str, Any]
    compatibility_date: str
    env: dict[str, Any]
    # Bindings to svc's entrypoints in the runtime (env.db): name -> {"entrypoint", "props"}.
    entrypoints: dict[str, dict[str, Any]] = {}
    # "<digest hex>/assets", or None when the bundle has no assets/ (no env.ASSETS then).
    assets: str | None


class RuntimeLogLine(ApiInput):
    # Milliseconds since the epoch, as the runtime stamps them.
    at: float
    level: str = Field(max_length=16)
    message: str = Field(max_length=64 * 1024)
    stack: str | None = Field(default=None, max_length=64 * 1024)
    request_id: str | None = Field(default=None, max_length=64)


class RuntimeLogLines(ApiInput):
    lines: list[RuntimeLogLine] = Field(max_length=1000)


class LogLineView(ApiModel):
    seq: int
    at: Timestamp
    # worker (console output, exceptions) | edge (one line per request; docs/workers.md)
    source: str
    level: str
    message: str
    stack: str | None
    request_id: str | None


class LogPage(ApiModel):
    lines: list[LogLineView]
    # Pass as `cursor` to get the lines stored after these (`svc logs --follow` does).
    next_cursor: str


class TrafficBucket(ApiModel):
    """Requests in the bucket by status class, and the bytes of their bodies."""

    start: Timestamp
    s2xx: int = Field(alias="s2xx")
    s3xx: int = Field(alias="s3xx")
    s4xx: int = Field(alias="s4xx")
    s5xx: int = Field(alias="s5xx")
    bytes_sent: int


class Traffic(ApiModel):
    """A project's requests at the edge over the last `hours`, in equal buckets, oldest first."""

    hours: int
    minutes_per_bucket: int
    buckets: list[TrafficBucket]
    requests: int
    bytes_sent: int
