"""The edge (a private nginx, supervised) as a component: started after the worker runtime it serves
workers from, with the routes, traffic log and certificates of the areas behind it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from svc.adapters.edge.settings import EdgeSettings, edge_url
from svc.domains.certificates.service import EdgeCertificates
from svc.domains.deployments.service import site_of
from svc.domains.projects.service import ProjectRoutes
from svc.domains.workers.service import SteadySource, TrafficRecorder
from svc.edge import INSTALL_HINT, EdgePortInUse, edge_address, edge_port_taken, start_edge
from svc.kit.hosts import local_address
from svc.settings import Config
from svc.supervisor import find_binary, host_port
from svc.supervisor.component import Component, Launch, Line


class EdgeRouting(ProjectRoutes):
    """What the edge reads of the store (svc.adapters.edge.port.RoutingSource): the projects'
    routes, and a live deployment's site from the deployments area."""

    async def site(self, digest: str) -> Path:
        return await site_of(self.ctx, digest)


def _port_taken_words(address: str) -> str:
    return f"the edge port {address} is in use; stop what uses it or choose another with --edge-port"


def _preflight(config: Config) -> str | None:
    settings = config.settings_of(EdgeSettings)
    # Else nginx would retry binding for seconds and exit, again and again (the start checks again).
    if settings.edge_enabled and find_binary(settings.nginx_binary) is not None and edge_port_taken(config):
        return _port_taken_words(edge_address(config))
    return None


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    config: Config = ctx.config
    settings = config.settings_of(EdgeSettings)
    if "edge" not in launch.processes or not settings.edge_enabled:
        yield
        return
    runtime = ctx.adapters.runtime
    edge = await start_edge(config, EdgeRouting(ctx), api_url=launch.api_url, runtime=runtime,
                            traffic=TrafficRecorder(ctx) if settings.edge_traffic_log else None,
                            certificates=EdgeCertificates(ctx) if settings.edge_tls_port else None)
    ctx.edge = edge
    if runtime is not None and edge is not None:
        # Each shard's live workers, served steadily behind the loading processes.
        runtime.follow(SteadySource(ctx), edge.steady_changed, edge.layout.error_log)
    try:
        yield
    finally:
        if runtime is not None and ctx.adapters.runtime is runtime:
            # First: its steady processes tell the edge of their changes while they run.
            ctx.adapters.runtime = None
            await runtime.stop()
        if edge is not None:
            await edge.stop()


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings = config.settings_of(EdgeSettings)
    if not settings.edge_enabled:
        return [Line("edge", "off (SVC_EDGE_ENABLED=false): deployments are not served by this process")]
    nginx = find_binary(settings.nginx_binary)
    if nginx is None:
        return [Line("edge", f"OFF - nginx ({settings.nginx_binary}) was not found, so deployments are not served. "
                             f"To serve them, {INSTALL_HINT}.", alarm=True)]
    sample = edge_url(config, f"<project>-<org>.{config.settings.app_domain}")
    where = host_port(local_address(settings.edge_host), settings.edge_port)
    return [Line("edge", f"{sample}/  (nginx {nginx} on {where}; log in {config.settings.data_dir / 'edge'})")]


def _explain(exc: Exception) -> str:
    assert isinstance(exc, EdgePortInUse)
    return _port_taken_words(exc.address)


COMPONENT = Component(name="edge", settings=EdgeSettings, after=("workers",), start=_start, preflight=_preflight,
                      banner=_banner, explains={EdgePortInUse: _explain}, processes=("nginx",))
