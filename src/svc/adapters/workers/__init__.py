"""The worker runtime (port.py) on workerd (workerd.py): started with the edge by `svc serve`."""

from __future__ import annotations

import asyncio
import logging
import os

from svc.adapters.workers.port import WorkerRuntime
from svc.adapters.workers.workerd import WorkerdOptions, WorkerdRuntime, find_workerd, runnable_by_others
from svc.kit.hosts import local_address
from svc.settings import Settings
from svc.supervisor import MissingBinary, PortInUse, ProcessError, host_port, resolve_binary

__all__ = ["find_workerd", "start_runtime"]

log = logging.getLogger("svc.workers")

INSTALL_HINT = "install it with `make setup` (npm's workerd), or set SVC_WORKERD_BINARY"


async def start_runtime(settings: Settings, *, api_address: str) -> WorkerRuntime | None:
    """Start the worker runtime; None (logged) when workerd is missing or will not start: the
    edge then serves the projects' assets only. `api_address` (host:port) is where workerd
    reaches this svc's API."""
    try:
        binary = (resolve_binary(settings.workerd_binary, what="workerd") if settings.workerd_binary
                  else find_workerd())
    except MissingBinary as exc:
        log.warning("workers are off: %s; %s", exc, INSTALL_HINT)
        return None
    if binary is None:
        log.warning("workers are off: workerd was not found; %s", INSTALL_HINT)
        return None
    data_dir = settings.data_dir.resolve()
    # env.ASSETS is read through the edge (its runtime files server), which listens there.
    edge = host_port(local_address(settings.edge_host), settings.edge_port)
    # svc as root runs workerd as an unprivileged user (projects' code must not run as root).
    user = settings.worker_user if os.geteuid() == 0 else None
    if user is not None:
        binary = await asyncio.to_thread(runnable_by_others, binary)
    runtime = WorkerdRuntime(WorkerdOptions(binary=binary, root=data_dir / "workers", api_address=api_address,
                                            assets_address=edge, processes=settings.worker_processes, user=user,
                                            memory_mb=settings.worker_memory_mb))
    try:
        await runtime.start()
    except (PortInUse, ProcessError, OSError) as exc:
        log.error("workers are off: %s", exc)
        await runtime.stop()
        return None
    return runtime
