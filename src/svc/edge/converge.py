"""The Edge port with nginx: converged from the state store (the desired state), supervised.

- start(): render the config from the routing table, start nginx under its supervisor (nginx died:
  its leftovers killed, started again on the last good config; svc.supervisor), then the poller
  (edge_state.generation moved, or a site was missing last time: converge).
- converge_now(): read the routing table, make sure each live digest's site exists locally
  (RoutingSource.site: fetched from the blob store and unpacked when this data dir lacks it),
  render; when the text changed, `nginx -t` the new file, move it into place (atomic rename) and
  reload gracefully, returning once only workers of the new config accept connections. A refused
  config is logged and the previous one keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import grp
import logging
import os
import pwd
from collections.abc import Iterable
from pathlib import Path

from svc.adapters.edge.port import Route, RoutingSource
from svc.edge.config import (
    EdgeLayout,
    EdgeOptions,
    SiteRoute,
    config_id,
    listen_address,
    new_check_cache_dir,
    remove_check_cache_dir,
    render,
)
from svc.edge.process import EdgePortInUse, EdgeProcessError, NginxProcess
from svc.kit.hosts import valid_host
from svc.models import PROTECTED_ACCESS_MODES
from svc.settings import Settings
from svc.supervisor import Port, PortInUse

log = logging.getLogger("svc.edge")


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
        # One lock serialises converges (config test, reload) and nginx's (re)starts.
        self._lock = asyncio.Lock()
        self.process = NginxProcess(binary, self.layout, Port(settings.edge_host, settings.edge_port),
                                    _probe_host(settings.edge_host), config_id=self._config_id, lock=self._lock)
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        # The config file on disk (the last one nginx -t accepted) and the state it was made from.
        self._text: str | None = None
        self._generation: int | None = None
        self._incomplete = False
        self._roots: dict[str, Path] = {}

    # --- lifecycle ---

    async def start(self) -> None:
        """Converge once and start nginx. EdgePortInUse when another program listens on the edge's
        address; another failing start is logged and retried by the supervisor (svc keeps running)."""
        self.layout.prepare()
        # An nginx a killed svc left running still uses the check cache directory replaced below.
        await self.process.stop_stale()
        # A fresh check cache: answers cached by a previous run were keyed by a generation this run
        # may not share. In memory, as its files hold their keys (cookie values).
        cache_dir = new_check_cache_dir(self.layout.root) if self.options.check_cache_seconds > 0 else None
        if cache_dir is None and self.options.check_cache_seconds > 0:
            log.warning("the edge's check cache is off (no memory file system such as /dev/shm to keep it in): "
                        "protected projects ask the API on every request")
        self.options = dataclasses.replace(self.options, check_cache_dir=cache_dir)
        with contextlib.suppress(OSError):
            self._text = self.layout.conf.read_text()
        await self._converge()
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
        await self.process.stop()
        remove_check_cache_dir(self.options.check_cache_dir)

    # --- the Edge port ---

    async def converge_now(self) -> None:
        await self._converge()

    @property
    def serving_id(self) -> str | None:
        """The id of the config on disk (what nginx serves once converged)."""
        return self._config_id() if self._text is not None else None

    # --- converging ---

    def _config_id(self) -> str:
        cid = config_id(self._text or "")
        if cid is None:
            raise EdgeProcessError("the edge config on disk has no id")
        return cid

    async def _converge(self) -> None:
        async with self._lock:
            generation = await self.routing.generation()
            routes = await self.routing.routes()
            sites, complete = await self._sites(routes)
            text = render(self.options, self.layout, sites)
            self._generation = generation
            self._incomplete = not complete
            if text == self._text:
                return
            if not await self._install(text):
                return
            if self.process.running:
                await self.process.reload(self._config_id())
                log.info("edge converged to generation %s (%s hosts)", generation, len(sites))

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

    async def _sites(self, routes: Iterable[Route]) -> tuple[list[SiteRoute], bool]:
        """Routes with the web root each serves. A live digest whose site cannot be made local
        keeps the host on what it served before (or on "no deployment yet") until a later try."""
        dirs: dict[str, Path | None] = {}
        complete = True
        out: list[SiteRoute] = []
        for route in routes:
            if not valid_host(route.host):
                log.warning("edge: not routing %r (not a valid host name)", route.host)
                continue
            if route.pending:
                # Ownership not proven: none of the project's content, only the pending answer.
                out.append(SiteRoute(host=route.host, web_root=None, protected=False, access_generation=0,
                                     pending=True))
                continue
            root: Path | None = None
            if route.digest is not None:
                if route.digest not in dirs:
                    dirs[route.digest] = await self._site(route.digest)
                site = dirs[route.digest]
                if site is not None:
                    root = site / "assets"
                else:
                    complete = False
                    previous = self._roots.get(route.host)
                    root = previous if previous is not None and previous.is_dir() else None
            if root is not None:
                self._roots[route.host] = root
            out.append(SiteRoute(host=route.host, web_root=root, protected=route.access_mode in PROTECTED_ACCESS_MODES,
                                 access_generation=route.access_generation))
        return out, complete

    async def _site(self, digest: str) -> Path | None:
        """The digest's unpacked site in this process's data dir, fetched from the blob store when
        missing (a second svc process, a wiped data dir); None (logged) when it cannot be had."""
        try:
            path = await self.routing.site(digest)
        except Exception as exc:
            log.warning("edge: the site of %s is not available here (%s: %s); retrying", digest,
                        type(exc).__name__, exc)
            return None
        return path.resolve() if path.is_dir() else None

    # --- loops ---

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)

    async def _poll(self) -> None:
        while not self._stopping.is_set():
            await self._sleep(self.settings.edge_converge_seconds)
            if self._stopping.is_set():
                return
            try:
                generation = await self.routing.generation()
                if generation != self._generation or self._incomplete:
                    await self._converge()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("edge converge failed; retrying")
