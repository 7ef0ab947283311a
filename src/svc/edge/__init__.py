"""The edge: a private nginx in front of every project, generated from the state store and
supervised by svc (docs/edge.md). config.py renders nginx.conf, process.py runs nginx,
converge.py implements the Edge port (svc.adapters.edge.port)."""

from __future__ import annotations

import logging

from svc.context import AppContext
from svc.edge.config import EdgeConfigError
from svc.edge.converge import NginxEdge
from svc.edge.process import EdgeProcessError, find_nginx

log = logging.getLogger("svc.edge")

INSTALL_HINT = "install nginx (Debian: apt-get install nginx-light; `make run` does it) or set SVC_NGINX_BINARY"

__all__ = ["INSTALL_HINT", "NginxEdge", "find_nginx", "start_edge"]


async def start_edge(ctx: AppContext, *, api_url: str) -> NginxEdge | None:
    """Start this process's edge; None (logged) when nginx is missing or the edge cannot be set up.
    `api_url` is where nginx reaches this svc's API (http://host:port)."""
    binary = find_nginx(ctx.settings.nginx_binary)
    if binary is None:
        log.warning("the edge is off: nginx (%s) was not found; %s", ctx.settings.nginx_binary, INSTALL_HINT)
        return None
    edge = NginxEdge(ctx, api_url=api_url, binary=binary)
    try:
        await edge.start()
    except (EdgeConfigError, EdgeProcessError, OSError) as exc:
        log.error("the edge is off: %s", exc)
        await edge.stop()
        return None
    return edge
