"""The worker runtime port: what svc needs of the program that runs the projects' workers
(workerd, adapters/workers/workerd.py). The runtime holds no state of its own: the edge names the
worker of each request (its key), and the runtime asks svc for that worker's code and bindings the
first time it sees the key (GET /v1/runtime/workers/{key}). A new key is how a deployment, a
rollback or a change of bindings reaches it: nothing is pushed, nothing restarts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class WorkerCode:
    """A worker as the runtime loads it: ES modules by their path under worker/ ("index.js",
    "lib/util.js"), the one the runtime starts, and the compatibility date it runs under."""

    main_module: str
    # A module is its source (an ES module), or {"json": value} or {"text": string}.
    modules: Mapping[str, object]
    compatibility_date: str


class BadWorker(Exception):
    """The runtime cannot run this code; the message is the runtime's own words (the line and the
    column of a syntax error, the module an import names, the date it does not know)."""


class RuntimeUnavailable(Exception):
    """The runtime is not running or did not answer in time (a worker's top-level code that never
    returns ends here too): the caller refuses with 503 and the runtime is restarted."""


@dataclass(frozen=True)
class Upstream:
    """Where the edge sends a worker's requests: a runtime process and the token it expects."""

    host: str
    port: int


class WorkerRuntime(Protocol):
    description: str  # for the banner: "workerd 2026-11-17 (2 processes)"
    # Sent with each request to the runtime, and by the runtime with each request to svc.
    token: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def upstreams(self) -> tuple[Upstream, ...]:
        """The processes that serve requests; a project is served by upstreams()[shard_of(id)]."""
        ...

    def shard_of(self, project_id: str) -> int: ...

    async def check(self, code: WorkerCode) -> None:
        """Load the code as the runtime would (parse, imports, top-level code, the default export's
        fetch handler, the compatibility date) without calling its fetch(). BadWorker with the
        runtime's words, or RuntimeUnavailable."""
        ...
