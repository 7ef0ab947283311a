"""Ports for the servers the tests start: free, and outside the kernel's ephemeral range.

A port the kernel hands out for bind(("127.0.0.1", 0)) is an ephemeral one, which the next
outgoing connection on the machine may take as its own local port before the server the test
starts binds it (tests, nginx and workerd open connections all the time): the server then finds
its port in use. Ports below that range are never taken that way. Each pytest-xdist worker draws
from its own slice, so two workers never pick the same port."""

from __future__ import annotations

import collections
import os
import random
import socket
from pathlib import Path

_LOWEST = 10000
_WORKERS = 8
# Ports this process handed out lately: a port picked for one server is still free (bindable)
# until that server starts, so a second pick a moment later could return it again (one svc serve
# once got the same port for its API and its edge).
_handed_out: collections.deque[int] = collections.deque(maxlen=512)


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _candidates() -> range:
    top = _ephemeral_start()
    if top - _LOWEST < 1000:
        return range(0)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) % _WORKERS if worker.isdigit() else 0
    size = (top - _LOWEST) // _WORKERS
    return range(_LOWEST + index * size, _LOWEST + (index + 1) * size)


def _bindable(port: int, kind: int) -> bool:
    with socket.socket(socket.AF_INET, kind) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(*, udp_too: bool = False) -> int:
    """A port free on 127.0.0.1 for TCP (and UDP when `udp_too`: DNS binds both)."""
    candidates = _candidates()
    for _ in range(200 if candidates else 0):
        port = random.choice(candidates)
        if port in _handed_out:
            continue
        if _bindable(port, socket.SOCK_STREAM) and (not udp_too or _bindable(port, socket.SOCK_DGRAM)):
            _handed_out.append(port)
            return port
    for _ in range(50):  # no room below the ephemeral range: the kernel's choice
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _handed_out and (not udp_too or _bindable(port, socket.SOCK_DGRAM)):
            _handed_out.append(port)
            return port
    raise RuntimeError("no free port")
