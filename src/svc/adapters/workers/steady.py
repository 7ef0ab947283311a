"""Steady processes: each shard's live workers served with nothing of svc's in front of them.

A loading process (dispatcher.js) answers any key at once, but each request crosses from svc's
isolate into the project's, which costs a hello worker two thirds of its throughput. So each
shard also has a steady process whose configuration names the shard's live workers, each a
service of its own on a unix socket of its own (<slots>/<slot>.sock), and the edge proxies a
project's requests straight to that socket (nginx's upstream svc_steady, whose balancer, svc's
nginx module, connects to the slot the route names, with kept-alive connections per socket)
while the steady process holds the very key the store names. A changed project (deploy,
rollback, secret) is served by the loading process from the moment of its change; the shard
converges behind it:

1. the shard's live workers are read from the store (LiveWorkers), a short while after a change
   (SETTLE_SECONDS: a burst of deploys makes one new process, not one each);
2. a new (green) process is started beside the serving (blue) one, each worker on a fresh socket
   path in the green's own directory; once it answers, each socket is renamed over its project's
   slot path (atomic: nginx's next connection reaches green; kept-alive ones to blue finish);
3. blue is told to stop: workerd drains on SIGTERM (it stops listening, closes idle connections
   at once, finishes the requests in flight, streamed answers included, then exits), and nginx
   drops a kept-alive connection its peer closed (and retries a request it sent on one);
4. once blue has stopped listening, the changed projects are routed to their slots
   (SteadyChanged): a draining workerd reads no new request, so none reaches blue's older code
   once the edge sends a project to its slot. blue drains in the background, for as long as a
   request may take (SVC_WORKER_TIMEOUT_SECONDS), then is killed: a deploy or a secret set on
   the shard neither waits for it nor cuts a long request in flight. At most MAX_DRAINING
   processes of a shard drain at once (a stream of changes kills the oldest first).

A project keeps its slot while it has a live worker (a freed one is used again once every process
that bound it has exited); slots cost nginx nothing (no reload, no config line). A shard
whose new process cannot start (a worker whose top-level code fails only with its env, say)
keeps blue serving what it has and the loading process the rest, and retries after a while.

A serving process that dies (a worker past its memory; a loop the watchdog killed) is not started
again as it was: the projects whose requests it cut (the witness, witness.py: nginx's error log)
each get a shard of their own (a quarantine: one worker on its own process, on its slot), the
others go to the loading process at once and to a fresh process without them. A quarantined
project whose own process dies is held: its slot answers 503 worker_held (witness.REFUSAL) for
HOLD_SECONDS, doubling with each death; one that has not died for RELEASE_SECONDS goes home."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from svc.adapters.workers.config import DirectWorker
from svc.adapters.workers.port import LiveWorkers, SteadyChanged
from svc.adapters.workers.witness import REFUSAL, cut_slots
from svc.supervisor import ProcessError, Supervisor

log = logging.getLogger("svc.workers")

# How long a shard waits after a change for others to join it.
SETTLE_SECONDS = 0.3
# After a new process failed to start, how long before the same workers are tried again.
RETRY_SECONDS = 30.0
# A shard's next new process waits this many times as long as the last one took to come up.
BUSY_FACTOR = 2.0
# Replaced processes of one shard left to finish their requests at once (each costs its memory).
MAX_DRAINING = 2
# A project held after its own process died: 503 worker_held for this long, doubling each death.
HOLD_SECONDS = 2.0
MAX_HOLD_SECONDS = 300.0
# A quarantined project whose own process has not died for this long goes back to its shard.
RELEASE_SECONDS = 600.0
# At most this many projects on processes of their own (each costs a workerd process).
MAX_QUARANTINED = 16
# The witness: how long nginx is given to write its lines, and how far back they are read.
CUT_SECONDS = 0.2
WITNESS_SECONDS = 3.0
# A quarantined project's key while its slot answers 503 worker_held.
REFUSED = "refused:"
# The names of a shard's steady processes: serving, starting, and up to MAX_DRAINING draining.
NAMES = "abcd"
# How long a replaced process may take to stop listening (it does so as it reads SIGTERM).
UNLISTEN_SECONDS = 2.0


class SteadyProcess(Protocol):
    supervisor: Supervisor

    def forget_config(self) -> None:
        """Remove its configuration from disk (it holds the projects' secrets)."""
        ...

    def listening(self) -> bool:
        """Whether it still takes new connections (a draining workerd does not)."""
        ...


async def _nothing() -> None:
    return None


# The runtime's process named so, serving these workers, calling back once each start answers.
ProcessFactory = Callable[[str, Sequence[DirectWorker], Callable[[], Awaitable[None]],
                           Callable[[int], Awaitable[bool]] | None], SteadyProcess]


# nginx's upstream of the steady sockets (svc's balancer picks the slot the route names).
STEADY_UPSTREAM = "svc_steady"


@dataclass(eq=False)
class _Shard:
    n: int
    poke: asyncio.Event = field(default_factory=asyncio.Event)
    serving: SteadyProcess | None = None
    # What the serving process holds: project -> key.
    held: dict[str, str] = field(default_factory=dict)
    # What the edge may send to the slots: project -> key (a subset of `held` while swapping).
    steady: dict[str, str] = field(default_factory=dict)
    # Replaced processes finishing their requests in flight, oldest first, with what each holds.
    draining: list[tuple[SteadyProcess, dict[str, str]]] = field(default_factory=list)
    # Held while the shard converges, and while a drained process's slots are let go.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The names (and so the directories) of the serving and the draining processes.
    names: dict[int, str] = field(default_factory=dict)
    # Not before this (the event loop's time): see BUSY_FACTOR.
    next_at: float = 0.0
    failed: dict[str, str] | None = None
    # A quarantine: a shard of one project, whose worker ended a process it shared.
    only: str | None = None
    # Its own process's deaths; while the event loop's time is before refused_until, its slot
    # answers 503 worker_held (REFUSAL) instead of its worker.
    crashes: int = 0
    refused_until: float = 0.0
    # Converge without the settle wait (a death: the projects left go to a fresh process).
    urgent: bool = False

    @property
    def label(self) -> str:
        return f"shard {self.n}" if self.only is None else f"quarantine of {self.only}"


class SteadyWorkers:
    """The steady processes of every shard of a WorkerdRuntime, and the slots they bind."""

    def __init__(self, shards: int, shard_of: Callable[[str], int], make_process: ProcessFactory,
                 sockets: Path, *, settle_seconds: float = SETTLE_SECONDS, drain_seconds: float = 30.0) -> None:
        """The sockets' directory is made here; nothing runs before follow(). A replaced process
        drains for drain_seconds (the wall-time bound of a request) before it is killed."""
        self.shard_of = shard_of
        self.make_process = make_process
        self.sockets = sockets
        self.settle_seconds = settle_seconds
        self.drain_seconds = drain_seconds
        self._shards = [_Shard(n) for n in range(shards)]
        self._slots: dict[str, int] = {}
        self._free: list[int] = []
        # <slot>.sock, each renamed in from a steady process's own directory.
        self.slots = self.sockets / "slots"
        self.slots.mkdir(exist_ok=True)
        os.chmod(self.slots, 0o755)  # noqa: S103 - nginx's workers reach the sockets through it
        self._started: list[SteadyProcess] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._drains: set[asyncio.Task[None]] = set()
        # Projects on a process of their own (a quarantine shard each), after a death they were in.
        self._quarantine: dict[str, _Shard] = {}
        self.cuts: Path | None = None

    def follow(self, live: LiveWorkers, on_steady: SteadyChanged, cuts: Path | None = None) -> None:
        self.live = live
        self.on_steady = on_steady
        self.cuts = cuts
        self._tasks = [asyncio.create_task(self._run(shard), name=f"workerd steady shard {shard.n}")
                       for shard in self._shards]
        self.changed(None)

    # --- what the runtime asks ---

    def upstream(self, project_id: str, key: str) -> str | None:
        if project_id in self._quarantine and project_id in self._slots:
            # Never the shard's loading process, which its neighbours share: its own slot, whatever
            # its own process serves (its worker, a change of it a moment later, or 503 worker_held).
            return f"{STEADY_UPSTREAM}:{self._slots[project_id]}"
        shard = self._shards[self.shard_of(project_id)]
        if shard.steady.get(project_id) != key:
            return None
        return f"{STEADY_UPSTREAM}:{self._slots[project_id]}"

    def processes(self) -> list[SteadyProcess]:
        return [shard.serving for shard in (*self._shards, *self._quarantine.values()) if shard.serving is not None]

    def _home(self, project_id: str) -> _Shard:
        return self._quarantine.get(project_id) or self._shards[self.shard_of(project_id)]

    def changed(self, project_ids: Collection[str] | None) -> None:
        shards = [*self._shards, *self._quarantine.values()] if project_ids is None else {
            self._home(p) for p in project_ids}
        for shard in shards:
            shard.poke.set()

    async def stop(self) -> None:
        for task in (*self._tasks, *self._drains):
            task.cancel()
        for task in (*self._tasks, *self._drains):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        # Every process started and not yet stopped (a swap cut short leaves two in a shard).
        await asyncio.gather(*(p.supervisor.stop() for p in self._started))
        await asyncio.to_thread(shutil.rmtree, self.sockets, True)

    # --- a shard converging ---

    async def _run(self, shard: _Shard) -> None:
        loop = asyncio.get_running_loop()
        # What a killed svc left running on these directories goes first.
        for name in (f"steady-{shard.n}-{letter}" for letter in NAMES if shard.only is None):
            await self.make_process(name, (), _nothing, None).supervisor.stop_stale()
        while True:
            await shard.poke.wait()
            # A new process costs CPU in proportion to its workers: a shard that keeps changing
            # (a stream of deploys) starts one at most every BUSY_FACTOR times what the last took.
            await asyncio.sleep(0 if shard.urgent else max(self.settle_seconds, shard.next_at - loop.time()))
            shard.poke.clear()
            shard.urgent = False
            started = loop.time()
            try:
                async with shard.lock:
                    await self._converge(shard)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("workerd %s: its steady process could not be brought up to date; retrying "
                              "in %.0fs (the loading process serves its changed projects meanwhile)",
                              shard.label, RETRY_SECONDS)
                loop.call_later(RETRY_SECONDS, shard.poke.set)
            shard.next_at = loop.time() + BUSY_FACTOR * (loop.time() - started)
            if shard.only is not None and self._quarantine.get(shard.only) is not shard and shard.serving is None:
                return  # a quarantine let go: its project is home, its process stopped

    async def _converge(self, shard: _Shard) -> None:
        keys = await self.live.keys()
        refused = shard.only is not None and asyncio.get_running_loop().time() < shard.refused_until
        wanted = {p: REFUSED + k if refused else k for p, k in keys.items() if self._home(p) is shard}
        if shard.serving is not None and wanted == shard.held:
            return
        if wanted == shard.failed:
            return  # the same workers failed to start: retried by the timer (or the next change)
        if not wanted:
            await self._swap(shard, None, {})
            return
        workers = await self.live.workers({p: k.removeprefix(REFUSED) for p, k in wanted.items()})
        if refused:
            workers = [replace(w, key=REFUSED + w.key, code=REFUSAL, env={}, assets=None) for w in workers]
        # A project the edge sends to its slot for a key the new process will not hold (its key
        # went back to the one the serving process holds: a rollback while this shard was
        # reading) goes to the loading process first: the rename below hands its slot to code of
        # another key.
        holds = {w.project_id: w.key for w in workers}
        stale = {p for p, k in shard.steady.items() if holds.get(p) != k}
        if stale:
            shard.steady = {p: k for p, k in shard.steady.items() if p not in stale}
            await self.on_steady(stale)
        for worker in workers:
            if worker.project_id not in self._slots:
                self._slots[worker.project_id] = self._free.pop() if self._free else len(self._slots)
        # A name (a directory) no process of the shard has: the serving one, the draining ones.
        taken = set(shard.names.values())
        prefix = f"steady-{shard.n}" if shard.only is None else f"held-{self._slots[shard.only]}"
        name = next(n for n in (f"{prefix}-{letter}" for letter in NAMES) if n not in taken)
        own = self.sockets / name
        direct = [DirectWorker(slot=self._slots[w.project_id], socket=own / f"{self._slots[w.project_id]}.sock",
                               project_id=w.project_id, code=w.code, env=w.env, assets=w.assets)
                  for w in workers]

        async def into_slots() -> None:
            await asyncio.to_thread(self._into_slots, direct)

        async def exited(code: int) -> bool:
            return await self._exited(shard, green, code)

        green = self.make_process(name, direct, into_slots, exited)
        shard.names[id(green)] = name
        await green.supervisor.stop_stale()
        self._started.append(green)
        try:
            await green.supervisor.launch()
        except ProcessError as exc:
            self._started.remove(green)
            shard.names.pop(id(green), None)
            await asyncio.to_thread(green.forget_config)
            shard.failed = dict(wanted)
            log.error("workerd %s: a new steady process for %d workers did not start (its projects stay "
                      "on the loading process; retried in %.0fs): %s", shard.label, len(direct), RETRY_SECONDS, exc)
            asyncio.get_running_loop().call_later(RETRY_SECONDS, shard.poke.set)
            return
        shard.failed = None
        await green.supervisor.start()  # supervised from now on (running: no second launch)
        await self._swap(shard, green, {w.project_id: w.key for w in workers})

    async def _swap(self, shard: _Shard, green: SteadyProcess | None, held: dict[str, str]) -> None:
        """Green is serving on the slots (renamed over): the edge may keep sending there the
        projects whose key did not change; blue stops listening and drains in the background;
        then the changed ones follow."""
        before = shard.steady
        shard.steady = {p: k for p, k in before.items() if held.get(p) == k}
        blue, blue_held = shard.serving, shard.held
        shard.serving, shard.held = green, held
        if blue is not None:
            shard.draining.append((blue, blue_held))
            await self._drain(shard, blue)
        await self._settle(shard, before)
        log.info("workerd %s: %d workers steady%s", shard.label, len(held), " (refused)" if any(
            k.startswith(REFUSED) for k in held.values()) else "")

    async def _drain(self, shard: _Shard, blue: SteadyProcess) -> None:
        """SIGTERM now, SIGKILL after drain_seconds (in a task of its own, not waited for); returns
        once blue takes no new connection (one still listening after UNLISTEN_SECONDS, stuck, is
        killed now). The oldest drainers over MAX_DRAINING are killed now."""
        while len(shard.draining) > MAX_DRAINING:
            oldest, _ = shard.draining[0]
            log.warning("workerd %s: %d replaced processes are draining; killing the oldest",
                        shard.label, len(shard.draining))
            await self._kill(shard, oldest)
        task = asyncio.create_task(self._drained(shard, blue),
                                   name=f"workerd {shard.label} draining {blue.supervisor.name}")
        self._drains.add(task)
        task.add_done_callback(self._drains.discard)
        await asyncio.sleep(0)  # its stop() begins: no longer supervised, then SIGTERM
        loop = asyncio.get_running_loop()
        deadline = loop.time() + UNLISTEN_SECONDS
        while blue.supervisor.running and await asyncio.to_thread(blue.listening):
            if loop.time() > deadline:
                log.warning("workerd %s: %s did not stop listening in %gs; killing it", shard.label,
                            blue.supervisor.name, UNLISTEN_SECONDS)
                await self._kill(shard, blue)
                break
            await asyncio.sleep(0.01)

    async def _drained(self, shard: _Shard, process: SteadyProcess) -> None:
        """A replaced process stopped (SIGKILL after drain_seconds); then the slots only it held
        are freed."""
        await process.supervisor.stop(grace=self.drain_seconds)
        async with shard.lock:
            if self._forget(shard, process):
                await self._settle(shard, shard.steady)

    async def _kill(self, shard: _Shard, process: SteadyProcess) -> None:
        """A draining process killed now (its drain task then ends at once)."""
        with contextlib.suppress(ProcessError):
            process.supervisor.send_signal(signal.SIGKILL)
        await process.supervisor.wait()
        self._forget(shard, process)

    def _forget(self, shard: _Shard, process: SteadyProcess) -> bool:
        if not any(p is process for p, _ in shard.draining):
            return False
        shard.draining = [(p, h) for p, h in shard.draining if p is not process]
        shard.names.pop(id(process), None)
        if process in self._started:
            self._started.remove(process)
        return True

    async def _settle(self, shard: _Shard, before: dict[str, str]) -> None:
        """Route each project the serving process holds to its slot (no process left listening
        holds older code of it); free the slots no process of the shard holds any more."""
        shard.steady = dict(shard.held) if shard.serving is not None else {}
        moved = {p for p in before.keys() | shard.steady.keys() if before.get(p) != shard.steady.get(p)}
        if moved:
            await self.on_steady(moved)
        bound = shard.steady.keys() | {p for _, h in shard.draining for p in h}
        for project_id in [p for p in self._slots if self._home(p) is shard and p not in shard.steady]:
            # No new connection may reach a gone project's slot; its number is used again once no
            # process that bound it is left (nginx keeps connections per socket path).
            slot = self._slots[project_id]
            self._slot_path(slot).unlink(missing_ok=True)
            if project_id not in bound:
                del self._slots[project_id]
                self._free.append(slot)

    # --- a process that died ---

    async def _exited(self, shard: _Shard, process: SteadyProcess, code: int) -> bool:
        """A steady process died (its worker passed its memory, or looped until the watchdog's
        kill): whether its supervisor starts it again as it was. A shared one whose dying requests
        name projects (the witness) is replaced at once without them, each moved to a process of
        its own (its neighbours meanwhile on the loading process); a quarantined one's project is
        held (503 worker_held) for a backoff that doubles with each death, then served again."""
        async with shard.lock:
            if process is not shard.serving:
                return False  # a draining one: its drain is over
            loop = asyncio.get_running_loop()
            if shard.only is not None:
                shard.crashes += 1
                hold = min(HOLD_SECONDS * 2 ** (shard.crashes - 1), MAX_HOLD_SECONDS)
                shard.refused_until = loop.time() + hold
                log.error("workerd: the worker of project %s ended its own process (death %d): its visitors get "
                          "503 worker_held for %gs", shard.only, shard.crashes, hold)
                self._lost(shard, process)
                shard.urgent = True
                shard.poke.set()
                loop.call_later(hold, shard.poke.set)
                return False
            suspects = await self._suspects(shard)
            if not suspects:
                return True
            before = shard.steady
            self._lost(shard, process)
            for project_id in suspects:
                own = _Shard(shard.n, only=project_id, urgent=True)
                self._quarantine[project_id] = own
                self._tasks.append(asyncio.create_task(self._run(own), name=f"workerd {own.label}"))
                own.poke.set()
                loop.call_later(RELEASE_SECONDS, self._release, own)
            log.error("workerd shard %d: its steady process died with requests of %s in flight: each moved to a "
                      "process of its own; the shard's other projects go to a fresh one", shard.n,
                      ", ".join(sorted(suspects)))
            shard.urgent = True
            shard.poke.set()
        # The neighbours to the loading process at once (their slots name a dead process).
        await self.on_steady(before.keys())
        return False

    async def _suspects(self, shard: _Shard) -> list[str]:
        if self.cuts is None:
            return []
        since = time.time() - WITNESS_SECONDS
        await asyncio.sleep(CUT_SECONDS)  # nginx writes a line as it sees each connection break
        slots = await asyncio.to_thread(cut_slots, self.cuts, self.slots, since)
        named = [p for p in shard.held if self._slots.get(p) in slots]
        return named[:max(0, MAX_QUARANTINED - len(self._quarantine))]

    def _lost(self, shard: _Shard, process: SteadyProcess) -> None:
        shard.serving, shard.held, shard.steady = None, {}, {}
        shard.names.pop(id(process), None)
        if process in self._started:
            self._started.remove(process)

    def _release(self, own: _Shard, crashes: int = 0) -> None:
        """A quarantined project whose own process has not died for RELEASE_SECONDS goes home."""
        project_id = own.only
        if project_id is None or self._quarantine.get(project_id) is not own:
            return
        if own.crashes != crashes:
            asyncio.get_running_loop().call_later(RELEASE_SECONDS, self._release, own, own.crashes)
            return
        del self._quarantine[project_id]
        log.info("workerd: project %s goes back to its shard (its own process ran %gs without dying)",
                 project_id, RELEASE_SECONDS)
        own.poke.set()
        self._home(project_id).poke.set()

    def _slot_path(self, slot: int) -> Path:
        return self.slots / f"{slot}.sock"

    def _into_slots(self, direct: list[DirectWorker]) -> None:
        for worker in direct:
            # nginx's workers (another user, maybe) connect: a socket is reached by who may write it.
            os.chmod(worker.socket, 0o666)  # noqa: S103 - in a directory only svc, nginx and workerd reach
            os.replace(worker.socket, self._slot_path(worker.slot))

