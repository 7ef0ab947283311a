"""The process supervisor: every program svc runs beside itself (the edge's nginx, the managed
PowerDNS, and later workerd, the project database cluster, pebble ...) is a ProcessSpec run by a
Supervisor, under the same rules (supervisor.py); component.py is what a component declares beside
its adapter. Domain-free: it imports only svc.kit, svc.settings and the standard library; what is
particular to a program (its config, its API) stays with its owner."""

from svc.supervisor.probes import http_get
from svc.supervisor.spec import (
    SBIN_DIRS,
    MissingBinary,
    Port,
    PortInUse,
    ProcessError,
    ProcessSpec,
    find_binary,
    host_port,
    resolve_binary,
    telling_line,
)
from svc.supervisor.supervisor import Supervisor, exit_words, stale_pid, taken_port
from svc.supervisor.system import children, free_tcp_port, port_in_use, title

__all__ = ["SBIN_DIRS", "MissingBinary", "Port", "PortInUse", "ProcessError", "ProcessSpec", "Supervisor",
           "children", "exit_words", "find_binary", "free_tcp_port", "host_port", "http_get", "port_in_use",
           "resolve_binary", "stale_pid", "taken_port", "telling_line", "title"]
