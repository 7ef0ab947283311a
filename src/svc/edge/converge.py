"""The Edge port with nginx: converged from the state store (the desired state), supervised.

Which host serves what is not in nginx's config: it is the routing table (routes.py), kept in
nginx's memory and read there on every request, so following the store is an entry replaced per
changed host and never a reload.

- start(): the routing table from the store (on disk for nginx to read as it starts), the config
  (config.py), nginx under its supervisor (nginx died: its leftovers killed, started again on the
  last good config; svc.supervisor), then the poller.
- follow(change): after a commit in this process, the hosts of the projects it touched are read
  from the store and their entries changed in nginx (logged on disk first); returns once they
  are (a 2xx means live). Concurrent calls are gathered into rounds (svc.kit.rounds): one store
  read and one message to nginx for all the changes of a round. Reads happen inside the round,
  after the commits they follow, so the last committed state wins.
- the poller: the routing table's counter moved by a commit of another process (on a shared
  PostgreSQL), or a site was missing or nginx unreachable last time: the whole table is
  converged (converge_now()).
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
import secrets
import signal
import time
from collections.abc import Collection
from pathlib import Path

from svc.adapters.edge.port import CertificateSource, EdgeChange, Route, RoutingSource, TrafficBatch, TrafficSink
from svc.adapters.edge.settings import EdgeSettings
from svc.adapters.workers.port import WorkerRuntime
from svc.adapters.workers.settings import WorkerRuntimeSettings
from svc.edge import tls
from svc.edge.config import (
    EdgeLayout,
    EdgeOptions,
    config_id,
    listen_address,
    render,
    upstream_name,
)
from svc.edge.process import EdgePortInUse, EdgeProcessError, NginxProcess, lua_modules, nginx_build
from svc.edge.routes import Entry, Kind, RouteTable
from svc.edge.routes_module import ModuleBuildError, routes_module
from svc.edge.traffic import TrafficLog, counts
from svc.kit import auth_cookie
from svc.kit.crypto import Keyring, load_or_create_secret_key
from svc.kit.hosts import local_address, valid_host
from svc.kit.rounds import Rounds
from svc.models import PROTECTED_ACCESS_MODES
from svc.settings import Config
from svc.supervisor import Port, PortInUse, host_port

log = logging.getLogger("svc.edge")

# In a round's items: the whole routing table (a project id is never this).
EVERYTHING = "*"
# How long a reconfigure waits for others to share its reload.
RELOAD_WINDOW_SECONDS = 0.05
# How often the traffic log is read (nginx flushes its buffer every second).
TRAFFIC_SECONDS = 1.0


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


class NginxEdge:
    """The Edge port with nginx. Reads the desired state through `routing` (the store's routing
    table, implemented by the projects area and handed in by svc.app): the edge imports no area."""

    def __init__(self, config: Config, routing: RoutingSource, *, api_url: str, binary: str,
                 worker_processes: int = 1, runtime: WorkerRuntime | None = None,
                 traffic: TrafficSink | None = None, certificates: CertificateSource | None = None) -> None:
        self.settings = settings = config.settings_of(EdgeSettings)
        self.routing = routing
        data_dir = config.settings.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.layout = EdgeLayout(data_dir / "edge")
        self.options = EdgeOptions(listen_host=settings.edge_host, listen_port=settings.edge_port, api_url=api_url,
                                   check_cache_seconds=settings.edge_check_cache_seconds,
                                   worker_processes=worker_processes,
                                   traffic_log=self.layout.traffic_log if traffic is not None else None,
                                   user=_worker_user(data_dir),
                                   workers=tuple(host_port(u.host, u.port) for u in runtime.upstreams())
                                   if runtime is not None else (),
                                   worker_sockets=runtime.steady_sockets() if runtime is not None else "",
                                   runtime_token=runtime.token if runtime is not None else "",
                                   worker_timeout_seconds=config.settings_of(WorkerRuntimeSettings).worker_timeout_seconds,
                                   sites=data_dir / "sites",
                                   tls_port=settings.edge_tls_port if certificates is not None else None,
                                   hsts_seconds=settings.edge_hsts_seconds, console_host=config.settings.console_host(),
                                   # The key the API signs svc_auth_user with: the same keyring's.
                                   auth_key=auth_cookie.edge_key(Keyring(load_or_create_secret_key(config.settings))))
        # The certificates served on the TLS port (None: http only), the version written and the
        # table's lines nginx holds (tls.py).
        self.certificates = certificates
        self._certificates_version: str | None = None
        self._certificate_lines: dict[str, str] = {}
        # The worker runtime the edge sends workers' requests to (None: static sites only).
        self.runtime = runtime
        # Who keeps the projects' traffic (the structured access log, followed: traffic.py).
        self.traffic = traffic
        self._traffic_log = TrafficLog(self.layout.traffic_log)
        self.description = f"nginx on {listen_address(settings.edge_host, settings.edge_port)}"
        # One lock serialises nginx's config tests, reloads and (re)starts.
        self._lock = asyncio.Lock()
        self.process = NginxProcess(binary, self.layout, Port(settings.edge_host, settings.edge_port),
                                    local_address(settings.edge_host), config_id=self._config_id, lock=self._lock)
        self.binary = binary
        self.table = RouteTable(self.layout)
        # One round at a time changes the table: a round's reads come after every commit it follows.
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
        # nginx may have missed changes (it could not be told): the next converge sends all.
        self._unsynced = False

    # --- lifecycle ---

    async def start(self) -> None:
        """Route every host, write the config and start nginx. EdgePortInUse when another program
        listens on the edge's address; another failing start is logged and retried by the
        supervisor (svc keeps running)."""
        build = await asyncio.to_thread(nginx_build, self.binary)
        modules = await asyncio.to_thread(lua_modules, self.binary, build)
        if modules is None:
            raise EdgeProcessError(f"{self.binary} has no Lua module, which the edge's routing table needs "
                                   "(Debian: apt-get install libnginx-mod-http-lua; `make run` does it)")
        try:
            # After the Lua module, whose functions it calls.
            modules = (*modules, await asyncio.to_thread(routes_module, build))
        except ModuleBuildError as exc:
            raise EdgeProcessError(f"the edge's nginx module could not be built: {exc} "
                                   "(`make setup` does it)") from None
        self.layout.prepare()
        # An nginx a killed svc left running (its routing table and check cache are of that run).
        await self.process.stop_stale()
        self.options = dataclasses.replace(self.options, modules=modules,
                                           control_token=secrets.token_urlsafe(24),
                                           request_id_prefix=secrets.token_hex(4))
        with contextlib.suppress(OSError):
            self._text = self.layout.conf.read_text()
        self.table.load()
        await self.converge_now()
        self.table.compact()
        await self._load_certificates()
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
        if self.traffic is not None:
            self._traffic_log.start()
            self._tasks.append(asyncio.create_task(self._follow_traffic(), name="svc-edge-traffic"))

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
        await self.process.aclose()

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

    async def steady_changed(self, project_ids: Collection[str]) -> None:
        """The runtime's steady processes serve these projects' workers now (or no longer)."""
        await self._rounds(project_ids)

    @property
    def serving_id(self) -> str | None:
        """The id of the config on disk (what nginx serves once started or reloaded)."""
        return self._config_id() if self._text is not None else None

    # --- the routing table ---

    async def _round(self, items: set[str]) -> None:
        if EVERYTHING in items:
            generation = await self.routing.generation()
            routes = await self.routing.routes()
            complete = await self._apply(routes, self.table.hosts(), everything=True)
            self._seen, self._own = generation, {g for g in self._own if g > generation}
            self._incomplete = not complete
            live = {route.digest for route in routes}
            self._sites = {digest: path for digest, path in self._sites.items() if digest in live}
        else:
            had = {host for host, project in self._owners.items() if project in items}
            routes = await self.routing.routes_for(items, had)
            if not await self._apply(routes, had):
                self._incomplete = True
        if self.runtime is not None:
            # The runtime's steady processes follow the same changes (behind the loading ones).
            self.runtime.changed(None if EVERYTHING in items else items)

    async def _apply(self, routes: list[Route], scope: set[str], *, everything: bool = False) -> bool:
        """Route each route's host to what it serves; hosts of `scope` no route names any more are
        removed. Logged on disk, then sent to nginx. Returns whether every live site was here."""
        sites: dict[str, Path | None] = {}
        for route in routes:
            if route.digest is not None and not route.pending and route.digest not in sites:
                sites[route.digest] = await self._site(route.digest)
        wanted: dict[str, Entry] = {}
        for route in routes:
            if not valid_host(route.host):
                log.warning("edge: not routing %r (not a valid host name)", route.host)
                continue
            wanted[route.host] = self._entry(route, sites.get(route.digest) if route.digest else None)
            self._owners[route.host] = route.project_id
        for host in scope - wanted.keys():
            self._owners.pop(host, None)
        lines = self.table.changes(wanted, scope)
        self.table.record(lines)
        if self._unsynced and everything:
            lines = self.table.everything()
        if lines and self.process.running:
            try:
                await self.process.send_routes(lines, self.options.control_token)
            except EdgeProcessError:
                # On disk already: a restarted nginx has them; a running one gets all next time.
                self._unsynced = True
                raise
            self._unsynced = self._unsynced and not everything
        return all(site is not None for site in sites.values())

    def _entry(self, route: Route, site: Path | None) -> Entry:
        protected = route.access_mode in PROTECTED_ACCESS_MODES
        generation = route.access_generation if protected else 0
        if route.pending:
            # Ownership not proven: none of the project's content, only the pending answer.
            return Entry(Kind.pending, str(self.layout.void_pending))
        if route.digest is None:
            return Entry(Kind.protected_none if protected else Kind.none, str(self.layout.void_none), generation)
        if site is None:
            # The live site is not here yet: the host keeps serving what it served (retried),
            # behind the access check if it is protected now.
            current = self.table.entry(route.host)
            root = current.root if current is not None and current.kind in (Kind.public, Kind.protected) else None
            if root is None:
                return Entry(Kind.protected_none if protected else Kind.none, str(self.layout.void_none), generation)
            return Entry(Kind.protected if protected else Kind.public, root, generation)
        kind = Kind.protected if protected else Kind.public
        if route.worker_key is not None and self.runtime is not None:
            # Its steady socket when the steady process holds this very key; else the loading one.
            upstream = (self.runtime.steady_upstream(route.project_id, route.worker_key)
                        or upstream_name(self.runtime.shard_of(route.project_id)))
            # worker-first: nginx's files are an empty directory; the worker has them as env.ASSETS.
            root = str(self.layout.void_none) if route.worker_assets == "worker-first" else str(site / "assets")
            return Entry(kind, root, generation, worker=route.worker_key, upstream=upstream)
        return Entry(kind, str(site / "assets"), generation)

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

    async def _load_certificates(self) -> None:
        """The certificates' table written when their version moved, and its changes sent to a
        running nginx (no reload); a start or reload reads the table written."""
        port = self.options.tls_port
        if self.certificates is None or port is None:
            return
        version = await self.certificates.version()
        if version == self._certificates_version:
            return
        served = await self.certificates.certificates()
        lines = await asyncio.to_thread(tls.write_table, self.layout.certs, served)
        changed = tls.changes(self._certificate_lines, lines)
        started = time.monotonic()
        if changed and self.process.running:
            await self.process.send_certificates(changed, self.options.control_token)
        self._certificate_lines = lines
        self._certificates_version = version
        log.info("edge: %d certificates served on %s (%d changes sent to nginx in %.3f s)", len(lines),
                 listen_address(self.options.listen_host, port), len(changed), time.monotonic() - started)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)

    async def _follow_traffic(self) -> None:
        """Hand what nginx logged since the last turn to the traffic sink, once a second."""
        assert self.traffic is not None
        while not self._stopping.is_set():
            await self._sleep(TRAFFIC_SECONDS)
            try:
                await self.read_traffic()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the edge's traffic could not be kept; trying again")

    async def read_traffic(self) -> None:
        """One turn of following the traffic: the log's new lines (a sample) and the counts nginx
        kept since the last turn, handed on together."""
        if self.traffic is None:
            return
        # self._owners is read from the thread: a dict lookup is atomic, and a host routed this very
        # moment is counted from the next turn.
        lines = await asyncio.to_thread(self._traffic_log.take, self._owners.get)
        collected = await self.process.collect_traffic(self.options.control_token) if self.process.running else ""
        batch = TrafficBatch(counts=counts(collected, self._owners.get), samples=lines)
        if batch.counts or batch.samples:
            await self.traffic.record(batch)
        if self._traffic_log.full and self.process.running:
            await asyncio.to_thread(self._traffic_log.rotate)
            self.process.send_signal(signal.SIGUSR1)  # nginx reopens its logs: a new traffic.log

    async def _poll(self) -> None:
        while not self._stopping.is_set():
            await self._sleep(self.settings.edge_converge_seconds)
            if self._stopping.is_set():
                return
            try:
                if self._incomplete or self._unsynced or self._foreign(await self.routing.generation()):
                    await self.converge_now()
                await self._load_certificates()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("edge converge failed; retrying")
