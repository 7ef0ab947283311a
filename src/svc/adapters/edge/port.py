"""The edge: the web server in front (nginx) that serves each host's live deployment.

Two ports meet here. `Edge` is what use cases see of it (ctx.edge): follow a committed change now.
`RoutingSource` is what the edge reads of the store, the desired state, implemented by the
projects area and handed to the edge by svc.app, so the edge imports no area."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Route:
    """One host the edge answers for: a hostname of an active project."""

    host: str
    project_id: str
    project_name: str
    org_id: str
    org_slug: str
    # The live deployment's artifact; None while the project has no deployment.
    digest: str | None
    access_mode: str
    access_generation: int
    # A custom hostname whose ownership is not proven yet: not routed to the project; the edge
    # answers 404 unknown_hostname, with a page naming the missing record for browsers.
    pending: bool = False
    # The live deployment's worker: the key the runtime loads it by (its deployment and the
    # project's bindings generation: a new key for new code or a new env); None: a static site.
    worker_key: str | None = None
    # "files-first" (a file of assets/ answers before the worker) or "worker-first".
    worker_assets: str = "files-first"


@dataclass(frozen=True)
class ServedCertificate:
    """A certificate the edge serves over TLS: the name it is for, its chain and its key (PEM)."""

    name: str
    fullchain_pem: str
    key_pem: str
    # The issuer's OCSP answer for it (DER), stapled to handshakes; None when there is none.
    ocsp_der: bytes | None = None
    # When it runs out (the edge stops serving it then); None: read from the chain's leaf.
    not_after: datetime | None = None


class CertificateSource(Protocol):
    """The certificates svc holds (the certificates area implements it; svc.app hands it in)."""

    async def version(self) -> str:
        """A text that changes when any certificate the edge serves changes (cheap: polled)."""
        ...

    async def certificates(self) -> list[ServedCertificate]: ...


class RoutingSource(Protocol):
    async def generation(self) -> int:
        """A counter that moves with every change the edge must follow (cheap: polled)."""
        ...

    async def routes(self) -> list[Route]:
        """Every host the edge answers for (routed ones, and pending ones), by host name."""
        ...

    async def routes_for(self, project_ids: Collection[str], hosts: Collection[str]) -> list[Route]:
        """The routes of these projects' hosts and of these hosts (whichever project has them now)."""
        ...

    async def site(self, digest: str) -> Path:
        """The unpacked artifact of `digest` in this process's data directory (its root holds
        assets/), fetched from the blob store and unpacked when missing. Raises when it cannot
        be had (the edge keeps serving what it served and tries again)."""
        ...


@dataclass(frozen=True)
class EdgeChange:
    """A committed change of the routing table: the projects it touched, and the routing table's
    counter (RoutingSource.generation) as that commit left it."""

    project_ids: frozenset[str]
    generation: int


@dataclass(frozen=True)
class TrafficRecord:
    """One request the edge answered for a project (a line of its structured access log)."""

    at: datetime
    project_id: str
    status: int
    bytes_sent: int
    duration_ms: float
    request_id: str
    method: str
    # The path only: a query string may carry one-time codes.
    path: str


@dataclass
class TrafficBatch:
    """What the edge answered since the last batch: every request counted by project, minute and
    status class (`counts`: (project id, minute start) -> [2xx, 3xx, 4xx, 5xx, bytes]), and some
    of them as lines (`samples`: the first few per project, for its logs)."""

    counts: dict[tuple[str, datetime], list[int]]
    samples: list[TrafficRecord]


class TrafficSink(Protocol):
    async def record(self, batch: TrafficBatch) -> None:
        """Keep a batch of the edge's requests: the counts (the traffic chart), the samples (logs)."""
        ...


class Edge(Protocol):
    """The web server in front, converged from the state store (the desired state)."""

    description: str

    async def converge_now(self) -> None:
        """Bring the whole edge to the current state store; returns once it serves that state."""
        ...

    async def follow(self, change: EdgeChange) -> None:
        """Bring the hosts of a committed change's projects to the current state store; returns
        once the edge serves them so."""
        ...
