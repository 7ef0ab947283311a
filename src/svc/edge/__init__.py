"""The edge: a private nginx in front of every project, generated from the state store and
supervised by svc (docs/edge.md). config.py renders nginx.conf (from templates/nginx.conf.j2),
process.py runs nginx (on svc.supervisor), converge.py implements the Edge port (svc.adapters.edge.port)."""

from __future__ import annotations

import logging

from svc.adapters.edge.port import CertificateSource, RoutingSource, TrafficSink
from svc.adapters.edge.settings import EdgeSettings
from svc.adapters.workers.port import WorkerRuntime
from svc.edge.config import EdgeConfigError, EdgeLayout, listen_address
from svc.edge.converge import NginxEdge
from svc.edge.process import EdgePortInUse, nginx_spec
from svc.settings import Config
from svc.supervisor import MissingBinary, Port, ProcessError, resolve_binary, taken_port

log = logging.getLogger("svc.edge")

INSTALL_HINT = ("install nginx and its Lua module (Debian: apt-get install nginx-light libnginx-mod-http-lua; "
                "`make run` does it) or set SVC_NGINX_BINARY")

__all__ = ["INSTALL_HINT", "EdgePortInUse", "NginxEdge", "edge_address", "edge_port_taken", "start_edge"]


def edge_address(config: Config) -> str:
    """host:port the edge listens on."""
    settings = config.settings_of(EdgeSettings)
    return listen_address(settings.edge_host, settings.edge_port)


def edge_port_taken(config: Config) -> bool:
    """Whether another program listens on the edge's address, checked before anything starts. An
    nginx that a previous svc on this data dir left running does not count: the edge replaces it."""
    settings = config.settings_of(EdgeSettings)
    spec = nginx_spec(settings.nginx_binary, EdgeLayout(config.settings.data_dir.resolve() / "edge"),
                      Port(settings.edge_host, settings.edge_port))
    return taken_port(spec) is not None


async def start_edge(config: Config, routing: RoutingSource, *, api_url: str,
                     runtime: WorkerRuntime | None = None, traffic: TrafficSink | None = None,
                     certificates: CertificateSource | None = None) -> NginxEdge | None:
    """Start this process's edge; None (logged) when nginx is missing or the edge cannot be set up.
    `api_url` is where nginx reaches this svc's API (http://host:port). Raises EdgePortInUse when
    another program listens on the edge's address: svc does not run beside an edge it cannot start."""
    settings = config.settings_of(EdgeSettings)
    try:
        binary = resolve_binary(settings.nginx_binary, what="nginx")
    except MissingBinary as exc:
        log.warning("the edge is off: %s; %s", exc, INSTALL_HINT)
        return None
    edge = NginxEdge(config, routing, api_url=api_url, binary=binary, runtime=runtime, traffic=traffic,
                     certificates=certificates)
    try:
        await edge.start()
    except EdgePortInUse:
        raise
    except (EdgeConfigError, ProcessError, OSError) as exc:
        log.error("the edge is off: %s", exc)
        await edge.stop()
        return None
    return edge
