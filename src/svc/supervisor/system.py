"""The process table and the ports, as a supervisor needs them: a process's command line and whether
it is alive, its children and process group (Linux /proc), killing what is left of a group, and
whether an address is free to bind."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
from pathlib import Path

from svc.supervisor.spec import Port

_HAS_PROC = os.path.isdir("/proc/self")


def cmdline(pid: int) -> list[str]:
    """The process's arguments ([] when it is gone or a zombie). A process that retitles itself
    (nginx: "nginx: worker process") shows its title as the first argument."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode("utf-8", "replace").rstrip("\0").split("\0") if raw.strip(b"\0") else []


def title(pid: int) -> str:
    """The command line as one string (how ps shows it)."""
    return " ".join(cmdline(pid)).strip()


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    if not _HAS_PROC:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The command name (in parentheses) may hold spaces and parentheses: fields start after the last ")".
    fields = stat[stat.rfind(")") + 2:].split()
    return bool(fields) and fields[0] != "Z"


def executable(pid: int) -> str | None:
    """The path of the program the process runs (None when it cannot be read: gone, another user's)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    # Replaced on disk (a package upgrade) while it runs.
    return exe.removesuffix(" (deleted)")


def processes() -> list[tuple[int, int, int]] | None:
    """(pid, parent pid, process group id) of every process (Linux /proc); None where /proc is missing."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    found = []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2:
            found.append((int(name), int(fields[1]), int(fields[2])))
    return found


def children(ppid: int) -> list[int]:
    """Pids whose parent is `ppid`; [] where /proc is missing."""
    return [pid for pid, parent, _ in processes() or [] if parent == ppid]


def group_members(pgid: int, exe: str) -> list[int] | None:
    """Live processes of group `pgid` running the program `exe`; None where /proc is missing. Only
    that program counts: once a group is empty its number may be reused by an unrelated group."""
    table = processes()
    if table is None:
        return None
    real = os.path.realpath(exe)
    return [pid for pid, _, group in table if group == pgid and alive(pid) and executable(pid) == real]


def kill_group(pgid: int, exe: str) -> None:
    """SIGKILL what is left of a process group (our children lead a group of their own: its id is
    their pid), one process at a time, only those running `exe`."""
    members = group_members(pgid, exe)
    if members is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        return
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def port_in_use(port: Port) -> bool:
    """Whether another socket holds the address for any of the port's protocols. TCP binds with
    SO_REUSEADDR as servers do, so connections in TIME_WAIT do not count; bind errors other than
    "in use" are left to the process (it says them in its own words)."""
    family = socket.AF_INET6 if ":" in port.host else socket.AF_INET
    for protocol in port.protocols:
        kind = socket.SOCK_STREAM if protocol == "tcp" else socket.SOCK_DGRAM
        with socket.socket(family, kind) as s:
            if kind == socket.SOCK_STREAM:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((port.host, port.port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return True
    return False


def free_tcp_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (for a process's private API)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
