"""The unit of work: one per use case, whoever runs it (an API request, a job, a background cycle's
step, a server-side CLI command). It owns the use case's transaction and what must happen around it:

- its transaction policy (`Tx`), declared once by whoever opens it (the route, the job kind);
- the session it hands out (`uow.session`), which refuses commit() and rollback(): the use case
  flushes, the unit of work commits once the use case returned, or rolls back if it raised;
- `uow.enqueue(kind, payload)`: a job written in the same transaction (the transactional outbox),
  so the job exists exactly when the state change does; the worker is woken after the commit;
- `uow.after_commit(effect)`: side effects that may only happen once the change is durable (a
  finished artifact moved into place, the edge following), run in registration order;
  `uow.gathered(key, make)`: one such effect that several calls add to;
- `uow.after_rollback(effect)`: clean-up of what a failed transaction left outside the store (an
  uploaded artifact no row will ever point to).

An effect's failure is logged, never raised: the commit (or rollback) stands either way, and every
after-commit effect has a periodic path that catches up (the edge's converge loop, the worker's poll).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Hashable
from datetime import datetime
from enum import StrEnum
from types import TracebackType
from typing import Any, TypeVar, cast

from svc.context import AppContext
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import Job, JobStatus

log = logging.getLogger("svc.uow")

Effect = Callable[[], Awaitable[None]]
G = TypeVar("G", bound=Effect)

# A failing job is tried again (with backoff, svc/jobs/queries.py) this many times in all.
DEFAULT_MAX_ATTEMPTS = 8
# A job due this soon after its commit wakes this process's worker when it is due (a later one is
# found by the worker's poll).
SOON_SECONDS = 5.0


class Tx(StrEnum):
    """How a use case uses the state store."""

    # Reads only: nothing to commit (on SQLite the reads run on the event loop's thread).
    READ = "read"
    # One write transaction from the first statement to the commit.
    WRITE = "write"
    # Reads first; then slow outside work (an upload, an SMTP exchange) with nothing of the store
    # held (`close_reads()`); then one short write transaction (`begin_write()`). So a minute-long
    # upload never holds SQLite's single write lock, nor a PostgreSQL transaction open.
    READ_THEN_WRITE = "read_then_write"


_POLICY = "__svc_tx__"
Fn = TypeVar("Fn", bound=Callable[..., Any])


def use_case(tx: Tx) -> Callable[[Fn], Fn]:
    """Declare a use case's transaction policy, once, where the use case is written (its service
    function, or a job handler that is its own use case). Every entry point that runs it takes the
    policy from there: a route or page with `@runs(service.deploy)`, a job kind from its handler.
    Undeclared, a use case runs in its entry point's default (a route's method: GET reads, the rest
    write; a job: WRITE). A mismatch fails loudly: `close_reads()` in a write unit, `begin_write()`
    in a read unit."""

    def mark(fn: Fn) -> Fn:
        setattr(fn, _POLICY, tx)
        return fn

    return mark


def runs(case: Callable[..., Any]) -> Callable[[Fn], Fn]:
    """An entry point (API route, page, job handler) that runs `case`: its unit of work is opened
    with the policy `case` declares."""
    tx: Tx | None = getattr(case, _POLICY, None)
    if tx is None:
        raise TypeError(f"{case.__qualname__} declares no transaction policy (@use_case)")
    return use_case(tx)


def policy_of(fn: Callable[..., Any], default: Tx) -> Tx:
    declared: Tx | None = getattr(fn, _POLICY, None)
    return declared if declared is not None else default


class UnitOfWork:
    def __init__(self, ctx: AppContext, tx: Tx) -> None:
        self.ctx = ctx
        self.tx = tx
        self._writing = tx is Tx.WRITE
        self._session: StoreSession | None = None
        self._after_commit: list[Effect] = []
        self._after_rollback: list[Effect] = []
        self._gathered: dict[Hashable, Effect] = {}
        self._wakes_worker = False

    # --- the session ---

    @property
    def session(self) -> StoreSession:
        """The current session: a read session, or the write transaction once there is one.
        Opening it costs nothing; its first statement takes a connection."""
        if self._session is None:
            db = self.ctx.db
            self._session = db.write() if self._writing else db.read()
        return self._session

    @property
    def writing(self) -> bool:
        return self._writing

    async def close_reads(self) -> None:
        """Before slow outside work (READ, READ_THEN_WRITE): give back what reading held. Objects
        read so far stay readable, detached; a later `session` is a fresh one. In a write unit it
        raises: the write transaction would stay open across the slow work (the use case needs
        READ_THEN_WRITE, declared with @use_case, and its entry point @runs)."""
        if self._writing:
            raise RuntimeError("close_reads() in a write unit of work: the use case is READ_THEN_WRITE, and its "
                               "entry point must open it so (@runs)")
        await self._close()

    async def begin_write(self) -> StoreSession:
        """The write transaction of a READ_THEN_WRITE use case (the current one for WRITE). Load
        again, with a lock where rules need one, what the write depends on: the read session's
        objects are not part of it."""
        if self.tx is Tx.READ:
            raise RuntimeError("a READ unit of work cannot write")
        if not self._writing:
            await self._close()
            self._writing = True
        return self.session

    # --- what happens with the commit ---

    def enqueue(self, kind: StrEnum, payload: dict[str, Any] | None = None, *, run_at: datetime | None = None,
                dedupe_key: str | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Job:
        """Add a job to this transaction; the worker is woken once it commits (a job due within
        SOON_SECONDS: when it is due, not at the worker's next poll). `kind` is a
        kind of the area's own (domains/<area>/kinds.py; tests add kinds of their own)."""
        if not self._writing:
            raise RuntimeError("enqueue needs the write transaction (begin_write first)")
        now = utcnow()
        job = Job(id=new_id("job"), kind=kind.value, payload=payload or {}, status=JobStatus.queued,
                  dedupe_key=dedupe_key, run_at=run_at or now, attempts=0, max_attempts=max_attempts,
                  created_at=now)
        self.session.add(job)
        delay = (run_at - now).total_seconds() if run_at is not None else 0.0
        if 0 < delay <= SOON_SECONDS:
            self.after_commit(functools.partial(self._wake_worker_later, delay))
        elif not self._wakes_worker:
            self._wakes_worker = True
            self.after_commit(self._wake_worker)
        return job

    def after_commit(self, effect: Effect) -> None:
        """Run `effect` once the commit succeeded; an effect registered twice runs once."""
        if effect not in self._after_commit:
            self._after_commit.append(effect)

    def gathered(self, key: Hashable, make: Callable[[], G]) -> G:
        """The after-commit effect registered under `key` in this unit of work, made and registered
        by `make` the first time: several calls (one use case touching many projects) gather into
        one effect, which the caller adds to."""
        effect = self._gathered.get(key)
        if effect is None:
            effect = self._gathered[key] = make()
            self.after_commit(effect)
        return cast(G, effect)

    def after_rollback(self, effect: Effect) -> None:
        """Run `effect` if the unit of work rolls back (the use case raised, or the commit failed)."""
        if effect not in self._after_rollback:
            self._after_rollback.append(effect)

    async def _wake_worker(self) -> None:
        self.ctx.jobs_waiting.set()

    async def _wake_worker_later(self, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.ctx.jobs_waiting.set)

    # --- opening and ending ---

    async def __aenter__(self) -> UnitOfWork:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if exc is None:
            await self.commit()
        else:
            await self.rollback()

    async def commit(self) -> None:
        """For whoever opened the unit of work (`async with` calls it). A failed commit rolls back
        and raises."""
        session = self._session
        if self._writing and session is not None:
            try:
                await session.finish(commit=True)
            except BaseException:
                await self.rollback()
                raise
        await self._close()
        await _run(self._after_commit, "after commit")

    async def rollback(self) -> None:
        session = self._session
        try:
            if self._writing and session is not None:
                try:
                    await session.finish(commit=False)
                except Exception:
                    log.warning("rollback failed; the connection is discarded", exc_info=True)
        finally:
            # Even when cancelled mid-rollback: the connection goes back, the clean-up runs.
            await self._close()
            self._after_commit.clear()
            await _run(self._after_rollback, "after rollback")

    async def _close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()  # a cancellation does not cut it short (StoreSession.close)


async def _run(effects: list[Effect], when: str) -> None:
    if not effects:  # most units of work (every read request) have none
        return
    todo = list(effects)
    effects.clear()
    for effect in todo:
        try:
            await effect()
        except Exception:
            what = getattr(effect, "func", effect)  # a functools.partial: name its function
            log.exception("an effect %s failed (%s); its periodic path catches up",
                          when, getattr(what, "__qualname__", type(what).__name__))


def unit_of_work(ctx: AppContext, tx: Tx = Tx.WRITE) -> UnitOfWork:
    """`async with unit_of_work(ctx, Tx.WRITE) as uow:` for jobs' machinery, cycles and server-side
    commands; API routes get theirs from their route class (svc/deps.py)."""
    return UnitOfWork(ctx, tx)
