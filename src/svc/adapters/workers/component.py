"""The worker runtime (workerd) as a component: started with the edge, which it serves behind."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from svc.adapters.edge.settings import EdgeSettings
from svc.adapters.workers import start_runtime, workerd_binary
from svc.adapters.workers.settings import WorkerRuntimeSettings
from svc.settings import Config
from svc.supervisor import find_binary, host_port
from svc.supervisor.component import Component, Launch, Line


def address_of(api_url: str) -> str:
    """host:port where workerd reaches this svc's API at `api_url` (http://host[:port]; a listen-all
    host on loopback), as the edge's nginx does (svc/edge/config.py's api_address)."""
    parts = urlsplit(api_url)
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(parts.hostname or "", parts.hostname or "")  # noqa: S104
    return host_port(host, parts.port or 80)


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    edge_on = ctx.settings_of(EdgeSettings).edge_enabled
    if "workers" not in launch.processes or not edge_on or ctx.adapters.runtime is not None:
        yield
        return
    runtime = await start_runtime(ctx.config, api_address=address_of(launch.api_url))
    ctx.adapters.runtime = runtime
    try:
        yield
    finally:
        # The edge stops the runtime before itself when it ran in front of it (svc/edge/component.py).
        if ctx.adapters.runtime is runtime and runtime is not None:
            ctx.adapters.runtime = None
            await runtime.stop()


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings, edge = config.settings_of(WorkerRuntimeSettings), config.settings_of(EdgeSettings)
    if not edge.edge_enabled or find_binary(edge.nginx_binary) is None:
        return []  # nothing to serve them from: the edge's line says why
    workerd = workerd_binary(config)
    if workerd is None:
        return [Line("workers", "OFF - workerd was not found, so projects' workers do not run (their files are "
                                "served). To run them, install it with `make setup` (npm).", alarm=True)]
    return [Line("workers", f"workerd {workerd} ({settings.worker_processes} processes and a checker; log in "
                            f"{config.settings.data_dir / 'workers'})")]


COMPONENT = Component(name="workers", settings=WorkerRuntimeSettings, slot="runtime", start=_start, banner=_banner,
                      processes=("workerd",))
