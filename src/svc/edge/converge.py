"""The Edge port with nginx: converged from the state store (the desired state), supervised.

Which host serves what is not in nginx's config: it is one link per host (links.py), read by nginx
on every request, so following the store is a rename per changed host and never a reload.

- start(): make every host's link from the routing table, write the config (config.py) and start
  nginx under its supervisor (nginx died: its leftovers killed, started again on the last good
  config; svc.supervisor), then the poller.
- follow(change): after a commit in this process, the hosts of the projects it touched are read
  from the store and their links moved; returns once they are (a 2xx means live). Concurrent
  calls are gathered into rounds (svc.kit.rounds): one store read for all the changes of a round.
  Reads happen inside the round, after the commits they follow, so the last committed state wins.
- the poller: the routing table's counter moved by a commit of another process (on a shared
  PostgreSQL), or a site was missing last time: the whole table is converged (converge_now());
  once a minute, gates no link uses any more are removed (links.py).
- reconfigure(): the config's shape changed (its options): render, `nginx -t`, rename into place
  and reload gracefully, returning once only workers of the new config accept connections; calls
  within a short window share one reload. A refused config is logged and the previous one keeps
  serving.
- a live digest whose site is not in this data dir is fetched from the blob store and unpacked
  (RoutingSource.site); until it is there the host keeps what it served.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import grp
import logging
import os
import pwd
import time
from collections.abc import Collection
from pathlib import Path

from svc.adapters.edge.port import EdgeChange, Route, RoutingSource
from svc.edge.config import (
    EdgeLayout,
    EdgeOptions,
    config_id,
    listen_address,
    new_check_cache_dir,
    remove_check_cache_dir,
    render,
)
from svc.edge.links import GATE_GRACE_SECONDS, HostLinks
from svc.edge.process import EdgePortInUse, EdgeProcessError, NginxProcess
from svc.kit.hosts import valid_host
from svc.kit.rounds import Rounds
from svc.models import PROTECTED_ACCESS_MODES
from svc.settings import Settings
from svc.supervisor import Port, PortInUse

log = logging.getLogger("svc.edge")

# In a round's items: the whole routing table; unused gates removed (a project id is neither).
EVERYTHING = "*"
PRUNE = "-prune"
# How long a reconfigure waits for others to share its reload.
RELOAD_WINDOW_SECONDS = 0.05
# More links than this to change in one round: the renames run in a thread.
INLINE_CHANGES = 64

def _worker_user(data_dir: Path) -> str | None:
    """nginx started as root switches its workers to `user`: the data dir's owner, who can read
    the sites and write the edge's temp and cache directories."""
    if os.geteuid() != 0:
        return None
    st = data_dir.stat()
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        return "root root"
    return f"{user} {group}"


def _probe_host(host: str) -> str:
    if host in ("0.0.0.0", ""):  # noqa: S104 - listening on all addresses: probe on loopback
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


class NginxEdge:
    """The Edge port with nginx. Reads the desired state through `routing` (the store's routing
    table, implemented by the projects area and handed in by svc.app): the edge imports no area."""

    def __init__(self, settings: Settings, routing: RoutingSource, *, api_url: str, binary: str,
                 worker_processes: int = 1, access_log: bool = False) -> None:
        self.settings = settings
        self.routing = routing
        data_dir = settings.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.layout = EdgeLayout(data_dir / "edge")
        self.options = EdgeOptions(listen_host=settings.edge_host, listen_port=settings.edge_port, api_url=api_url,
                                   check_cache_seconds=settings.edge_check_cache_seconds,
                                   worker_processes=worker_processes, access_log=access_log,
                                   user=_worker_user(data_dir))
        self.description = f"nginx on {listen_address(settings.edge_host, settings.edge_port)}"
        # One lock serialises nginx's config tests, reloads and (re)starts.
        self._lock = asyncio.Lock()
        self.process = NginxProcess(binary, self.layout, Port(settings.edge_host, settings.edge_port),
                                    _probe_host(settings.edge_host), config_id=self._config_id, lock=self._lock)
        self.links = HostLinks(self.layout)
        # One round at a time moves links: a round's reads come after every commit it follows.
        self._rounds: Rounds[str] = Rounds(self._round)
        self._reloads: Rounds[str] = Rounds(self._reload, window=RELOAD_WINDOW_SECONDS)
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        # The config file on disk (the last one nginx -t accepted).
        self._text: str | None = None
        # Which project each routed host belongs to: a follow reads again the hosts it had.
        self._owners: dict[str, str] = {}
        # The routing table's counter at the last whole converge, and the later values committed in
        # this process (followed already): any other value is another process's change.
        self._seen: int | None = None
        self._own: set[int] = set()
        self._incomplete = False
        self._sites: dict[str, Path] = {}
        self._pruned_at = time.monotonic()

    # --- lifecycle ---

    async def start(self) -> None:
        """Link every host, write the config and start nginx. EdgePortInUse when another program
        listens on the edge's address; another failing start is logged and retried by the
        supervisor (svc keeps running)."""
        self.layout.prepare()
        # An nginx a killed svc left running still uses the check cache directory replaced below.
        await self.process.stop_stale()
        # A fresh check cache: answers cached by a previous run were keyed by gates this run may
        # make again. In memory, as its files hold their keys (cookie values).
        cache_dir = new_check_cache_dir(self.layout.root) if self.options.check_cache_seconds > 0 else None
        if cache_dir is None and self.options.check_cache_seconds > 0:
            log.warning("the edge's check cache is off (no memory file system such as /dev/shm to keep it in): "
                        "protected projects ask the API on every request")
        self.options = dataclasses.replace(self.options, check_cache_dir=cache_dir)
        with contextlib.suppress(OSError):
            self._text = self.layout.conf.read_text()
        self.links.load()
        await self.converge_now()
        async with self._lock:
            await self._configure()
        if self._text is None:
            raise EdgeProcessError("no edge config could be written")
        try:
            await self.process.start()
        except PortInUse as exc:
            await self.stop()
            raise EdgePortInUse(exc.address) from None
        self._tasks = [asyncio.create_task(self._poll(), name="svc-edge-poller")]

    async def stop(self) -> None:
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._rounds.close()
        await self._reloads.close()
        await self.process.stop()
        remove_check_cache_dir(self.options.check_cache_dir)

    # --- the Edge port ---

    async def follow(self, change: EdgeChange) -> None:
        await self._rounds(change.project_ids)
        self._own.add(change.generation)

    async def converge_now(self) -> None:
        await self._rounds((EVERYTHING,))

    async def reconfigure(self) -> None:
        """The config's shape changed (self.options): write it and reload nginx once it passes
        `nginx -t`; calls within RELOAD_WINDOW_SECONDS share one reload."""
        await self._reloads()

    @property
    def serving_id(self) -> str | None:
        """The id of the config on disk (what nginx serves once started or reloaded)."""
        return self._config_id() if self._text is not None else None

    # --- the links ---

    async def _round(self, items: set[str]) -> None:
        if PRUNE in items:
            items.discard(PRUNE)
            self._pruned_at = time.monotonic()
            await asyncio.to_thread(self.links.prune, nginx_running=self.process.running)
        if not items:
            return
        if EVERYTHING in items:
            generation = await self.routing.generation()
            routes = await self.routing.routes()
            complete = await self._apply(routes, self.links.hosts())
            self._seen, self._own = generation, {g for g in self._own if g > generation}
            self._incomplete = not complete
            live = {route.digest for route in routes}
            self._sites = {digest: path for digest, path in self._sites.items() if digest in live}
            if not self.process.running:
                await asyncio.to_thread(self.links.prune, nginx_running=False)
        else:
            had = {host for host, project in self._owners.items() if project in items}
            routes = await self.routing.routes_for(items, had)
            if not await self._apply(routes, had):
                self._incomplete = True

    async def _apply(self, routes: list[Route], scope: Collection[str]) -> bool:
        """Link each route's host to what it serves; hosts of `scope` no route names any more lead
        to void/unknown. Returns whether every live site was here."""
        valid = []
        for route in routes:
            if valid_host(route.host):
                valid.append(route)
            else:
                log.warning("edge: not routing %r (not a valid host name)", route.host)
        sites: dict[str, Path | None] = {}
        for route in valid:
            if route.digest is not None and not route.pending and route.digest not in sites:
                sites[route.digest] = await self._site(route.digest)
        plan = [(route, sites.get(route.digest) if route.digest is not None else None) for route in valid]
        if len(plan) > INLINE_CHANGES:
            changed = await asyncio.to_thread(self._link, plan, scope)
        else:
            changed = self._link(plan, scope)
        if changed:
            log.debug("edge: %s host links changed", changed)
        return all(site is not None for site in sites.values())

    def _link(self, plan: list[tuple[Route, Path | None]], scope: Collection[str]) -> int:
        changed = 0
        routed = set()
        for route, site in plan:
            routed.add(route.host)
            changed += self.links.point(route.host, self._target(route, site))
            self._owners[route.host] = route.project_id
        for host in set(scope) - routed:
            changed += self.links.forget(host)
            self._owners.pop(host, None)
        return changed

    def _target(self, route: Route, site: Path | None) -> Path:
        if route.pending:
            # Ownership not proven: none of the project's content, only the pending answer.
            return self.layout.void_pending
        if route.digest is None:
            assets = None
        elif site is None:
            # The live site is not here yet: the host keeps serving what it served (retried).
            assets = self.links.served_assets(route.host)
        else:
            assets = site / "assets"
        if route.access_mode in PROTECTED_ACCESS_MODES:
            return self.links.gate(route.project_id, route.access_generation, assets)
        return assets if assets is not None else self.layout.void_none

    async def _site(self, digest: str) -> Path | None:
        """The digest's unpacked site in this process's data dir, fetched from the blob store when
        missing (a second svc process, a wiped data dir); None (logged) when it cannot be had."""
        known = self._sites.get(digest)
        if known is not None and known.is_dir():
            return known
        try:
            path = await self.routing.site(digest)
        except Exception as exc:
            log.warning("edge: the site of %s is not available here (%s: %s); retrying", digest,
                        type(exc).__name__, exc)
            return None
        if not path.is_dir():
            return None
        self._sites[digest] = path = path.resolve()
        return path

    # --- the config ---

    def _config_id(self) -> str:
        cid = config_id(self._text or "")
        if cid is None:
            raise EdgeProcessError("the edge config on disk has no id")
        return cid

    async def _reload(self, _items: set[str]) -> None:
        async with self._lock:
            if await self._configure() and self.process.running:
                await self.process.reload(self._config_id())
                log.info("edge reloaded onto config %s", self._config_id())

    async def _configure(self) -> bool:
        """Write the config when its text changed; whether a new one was installed."""
        text = render(self.options, self.layout)
        if text == self._text:
            return False
        return await self._install(text)

    async def _install(self, text: str) -> bool:
        """nginx -t the new config, then rename it into place; a refused one is logged and dropped."""
        candidate = self.layout.candidate
        candidate.write_text(text)
        ok, output = await self.process.test(candidate)
        if not ok:
            log.error("nginx -t refused the new edge config; the previous one keeps serving: %s", output)
            candidate.unlink(missing_ok=True)
            return False
        os.replace(candidate, self.layout.conf)
        self._text = text
        return True

    # --- the poller ---

    def _foreign(self, generation: int) -> bool:
        """Whether the counter moved by a commit this process has not followed."""
        seen = self._seen
        if seen is None or generation < seen:
            return True
        if all(g in self._own for g in range(seen + 1, generation + 1)):
            self._seen, self._own = generation, {g for g in self._own if g > generation}
            return False
        return True

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)

    async def _poll(self) -> None:
        while not self._stopping.is_set():
            await self._sleep(self.settings.edge_converge_seconds)
            if self._stopping.is_set():
                return
            try:
                if self._incomplete or self._foreign(await self.routing.generation()):
                    await self.converge_now()
                if time.monotonic() - self._pruned_at > GATE_GRACE_SECONDS:
                    await self._rounds((PRUNE,))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("edge converge failed; retrying")
