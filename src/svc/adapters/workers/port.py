"""The worker runtime port: what svc needs of the program that runs the projects' workers
(workerd, adapters/workers/workerd.py). Two paths serve a project's worker (docs/workers.md):

- loading: the edge names the worker of each request (its key), and the runtime asks svc for
  that worker's code and bindings the first time it sees the key (GET /v1/runtime/workers/{key}).
  A new key is how a deployment, a rollback or a change of bindings reaches it at once.
- steady: the runtime reads its shard's live workers from svc (LiveWorkers) and serves each on a
  socket of its own with nothing of svc's in front; the edge sends a project there only while the
  steady process holds the very key the store names (steady_upstream), else to the loading path."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class WorkerCode:
    """A worker as the runtime loads it: ES modules by their path under worker/ ("index.js",
    "lib/util.js"), the one the runtime starts, and the compatibility date it runs under."""

    main_module: str
    # A module is its source (an ES module), or {"json": value} or {"text": string}.
    modules: Mapping[str, object]
    compatibility_date: str


@dataclass(frozen=True)
class EntrypointBinding:
    """A binding of a project's env to one of svc's entrypoints in the runtime (dispatcher.js,
    which names the ones a project may be given): `props` say whose it is, as svc set them."""

    entrypoint: str
    props: Mapping[str, str]


@dataclass(frozen=True)
class InboundEmail:
    """A received message handed to a project's worker's email() handler: the envelope and the
    raw message as svc stored it (with the headers it added)."""

    mail_id: str
    sender: str
    # The envelope's recipients at the project's address, comma-separated (usually one).
    recipients: str
    raw: bytes


@dataclass(frozen=True)
class EmailVerdict:
    """What the worker's email() did with a message: "handled" (returned), "rejected" (it called
    message.setReject(reason)), or "no_handler" (its main module exports no email())."""

    outcome: str
    reason: str | None = None


class WorkerFailed(Exception):
    """The worker's handler threw, or did not finish in time; the message says which (the stack
    is in the project's logs)."""


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


@dataclass(frozen=True)
class LiveWorker:
    """A project's live worker as a steady process serves it: its key, code, env and files."""

    project_id: str
    key: str
    code: WorkerCode
    env: Mapping[str, object]
    # "<digest hex>/assets" under the sites, or None when the bundle has no assets/.
    assets: str | None


class LiveWorkers(Protocol):
    """What the runtime reads of the store (the workers area implements it; svc.app hands it in)."""

    async def keys(self) -> dict[str, str]:
        """Every active project with a live worker: its id -> its worker's key (cheap)."""
        ...

    async def workers(self, keys: Mapping[str, str]) -> list[LiveWorker]:
        """The code and env of these projects' workers, for those whose key is still that one."""
        ...


# Told which projects' steady upstream changed (the edge routes them again).
SteadyChanged = Callable[[Collection[str]], Awaitable[None]]


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

    def steady_sockets(self) -> str:
        """The directory of the steady workers' unix sockets: <slot>.sock each (nginx's upstream
        svc_steady connects to the one a request's route names)."""
        ...

    def steady_upstream(self, project_id: str, key: str) -> str | None:
        """The route to the project's own socket ("svc_steady:<slot>") when a steady process
        serves exactly this key (and no older process is left that could answer it with other
        code); else None."""
        ...

    def follow(self, live: LiveWorkers, on_steady: SteadyChanged, cuts: Path | None = None) -> None:
        """Start serving live workers steadily (after start()); on_steady tells the edge. `cuts`:
        the edge's error log, where nginx names the upstream of each request a dying process cut
        (how the runtime finds whose worker killed a process)."""
        ...

    def changed(self, project_ids: Collection[str] | None = None) -> None:
        """The store may have changed these projects' workers (None: any): their shards converge."""
        ...

    async def deliver_email(self, project_id: str, key: str, message: InboundEmail) -> EmailVerdict:
        """Run the email() handler of the worker `key` (the project's live one) on `message`, on
        the loading process of the project's shard, through its control socket (never one the
        edge reaches). WorkerFailed when the handler throws or overruns the wall-time bound;
        RuntimeUnavailable when the runtime does not answer."""
        ...

    async def check(self, code: WorkerCode) -> None:
        """Load the code as the runtime would (parse, imports, top-level code, the default export's
        fetch handler, the compatibility date) without calling its fetch(). BadWorker with the
        runtime's words, or RuntimeUnavailable."""
        ...
