"""What job kinds exist, the transaction policy each runs under, and which cycles run periodically.
Each area registers its own kinds (its jobs.py `register`), a StrEnum of its own (domains/<area>/kinds.py)
that its manifest declares (`job_kinds`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from svc.context import AppContext
from svc.kit.store_session import StoreSession
from svc.models import Operation, TeardownPhase
from svc.uow import Tx, UnitOfWork, policy_of


@dataclass
class JobRun:
    """One attempt at a job, inside its unit of work: the handler's writes commit in the same
    transaction that marks the job done, so they happen exactly when the job does. A handler that
    talks to the outside (SMTP, HTTP) declares Tx.READ_THEN_WRITE (@use_case): it reads, calls
    `uow.close_reads()`, does the slow work, then writes on `await uow.begin_write()`."""

    ctx: AppContext
    job_id: str
    kind: str
    payload: dict[str, Any]
    attempt: int
    max_attempts: int
    uow: UnitOfWork

    @property
    def session(self) -> StoreSession:
        return self.uow.session

    @property
    def last_attempt(self) -> bool:
        """No retry follows if this attempt raises: a handler records its final outcome itself."""
        return self.attempt >= self.max_attempts


JobHandler = Callable[[JobRun], Awaitable[None]]


@dataclass(frozen=True)
class JobSpec:
    handler: JobHandler
    tx: Tx


@dataclass(frozen=True)
class CycleSpec:
    kind: StrEnum
    interval_seconds: float


@dataclass(frozen=True)
class TeardownStep:
    """An area's part in one phase of a project's teardown (svc.models.TeardownPhase), declared
    by the area as it registers its jobs; the operations area runs the phases in order and knows
    no area (domains/operations/jobs.py). A phase's job runs READ_THEN_WRITE: first each step's
    `outside` (its reads, then `uow.close_reads()` and the work outside the store: files removed,
    a database drained), then, in the one write transaction that moves the operation on, each
    step's `write`, handed what its `outside` returned. Both are safe to run twice. Steps of a
    phase run in the order their areas are listed (svc/areas.py)."""

    phase: TeardownPhase
    outside: Callable[[UnitOfWork, Operation], Awaitable[Any]] | None = None
    write: Callable[[UnitOfWork, Operation, Any], Awaitable[None]] | None = None


@dataclass
class JobRegistry:
    specs: dict[str, JobSpec] = field(default_factory=dict)
    cycles: dict[str, CycleSpec] = field(default_factory=dict)
    # Every area's part of a project's teardown, as the areas registered them.
    teardown: list[TeardownStep] = field(default_factory=list)

    def teardown_step(self, step: TeardownStep) -> None:
        """The area's part in a phase of a project's teardown."""
        self.teardown.append(step)

    def handler(self, kind: StrEnum, fn: JobHandler) -> None:
        """The handler of a job kind; its unit of work's policy is the one the handler declares
        (@use_case, or @runs of the service use case it runs), else WRITE."""
        tx = policy_of(fn, Tx.WRITE)
        if kind.value in self.specs:
            raise ValueError(f"job kind {kind.value!r} registered twice")
        if tx is Tx.READ:
            raise ValueError("a job commits its completion: it needs Tx.WRITE or Tx.READ_THEN_WRITE")
        self.specs[kind.value] = JobSpec(handler=fn, tx=tx)

    def cycle(self, kind: StrEnum, interval_seconds: float, fn: JobHandler) -> None:
        """A periodic cycle is a job kind enqueued once per slot, whichever process claims the slot."""
        self.handler(kind, fn)
        self.cycles[kind.value] = CycleSpec(kind=kind, interval_seconds=interval_seconds)
