"""The worker runtime (port.py) on workerd (workerd.py): started with the edge by `svc serve`."""

from __future__ import annotations

import asyncio
import logging
import os

from svc.adapters.edge.settings import EdgeSettings
from svc.adapters.workers.port import WorkerRuntime
from svc.adapters.workers.settings import WorkerRuntimeSettings
from svc.adapters.workers.workerd import WorkerdOptions, WorkerdRuntime, find_workerd, runnable_by_others
from svc.kit.hosts import local_address
from svc.settings import Config
from svc.supervisor import PortInUse, ProcessError, find_binary, host_port

__all__ = ["start_runtime", "workerd_binary"]

log = logging.getLogger("svc.workers")

INSTALL_HINT = "install it with `make setup` (npm's workerd), or set SVC_WORKERD_BINARY"


def workerd_binary(config: Config) -> str | None:
    """The workerd svc runs: SVC_WORKERD_BINARY (a name on PATH or a path), else the one on PATH or
    `make setup`'s; None when it is not there."""
    settings = config.settings_of(WorkerRuntimeSettings)
    return find_binary(settings.workerd_binary) if settings.workerd_binary else find_workerd()


async def start_runtime(config: Config, *, api_address: str) -> WorkerRuntime | None:
    """Start the worker runtime; None (logged) when workerd is missing or will not start: the
    edge then serves the projects' assets only. `api_address` (host:port) is where workerd
    reaches this svc's API."""
    settings = config.settings_of(WorkerRuntimeSettings)
    binary = workerd_binary(config)
    if binary is None:
        log.warning("workers are off: workerd (%s) was not found; %s", settings.workerd_binary or "workerd",
                    INSTALL_HINT)
        return None
    data_dir = config.settings.data_dir.resolve()
    # env.ASSETS is read through the edge (its runtime files server), which listens there.
    edge_settings = config.settings_of(EdgeSettings)
    edge = host_port(local_address(edge_settings.edge_host), edge_settings.edge_port)
    # svc as root runs workerd as an unprivileged user (projects' code must not run as root).
    user = settings.worker_user if os.geteuid() == 0 else None
    if user is not None:
        binary = await asyncio.to_thread(runnable_by_others, binary)
    runtime = WorkerdRuntime(WorkerdOptions(binary=binary, root=data_dir / "workers", api_address=api_address,
                                            assets_address=edge, processes=settings.worker_processes, user=user,
                                            memory_mb=settings.worker_memory_mb,
                                            drain_seconds=settings.worker_timeout_seconds))
    try:
        await runtime.start()
    except (PortInUse, ProcessError, OSError) as exc:
        log.error("workers are off: %s", exc)
        await runtime.stop()
        return None
    return runtime
