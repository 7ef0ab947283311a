"""What a supervised process is: its spec (binary, arguments, ports, readiness, stop), the errors a
start can end in, where its binary is found and which line of its log tells what went wrong."""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# Where system daemons live besides PATH (a plain user's PATH often lacks the sbin directories).
SBIN_DIRS = ("/usr/sbin", "/usr/local/sbin")

Protocol = Literal["tcp", "udp"]


class ProcessError(RuntimeError):
    """A supervised process would not start, answer or take a signal; the message says why in one line."""


class MissingBinary(ProcessError):
    """The executable is not installed. The caller decides: most components svc runs are optional."""

    def __init__(self, binary: str, what: str | None = None) -> None:
        super().__init__(f"{what} ({binary}) was not found" if what else f"{binary} was not found")
        self.binary = binary


class PortInUse(ProcessError):
    """Another program holds an address the process must bind (not a process of ours on its way out)."""

    def __init__(self, port: Port) -> None:
        super().__init__(f"the address {port.address} is in use")
        self.port = port

    @property
    def address(self) -> str:
        return self.port.address


def host_port(host: str, port: int) -> str:
    """host:port, the host in brackets when it is an IPv6 address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class Port:
    """An address the process binds: checked free before each start (a bind as servers do it)."""

    host: str
    port: int
    protocols: tuple[Protocol, ...] = ("tcp",)

    @property
    def address(self) -> str:
        return host_port(self.host, self.port)


@dataclass(frozen=True)
class ProcessSpec:
    """One process svc runs and keeps running. Everything but name, binary and log has a default.

    Each start: the binary is looked up, a process of ours that a killed svc left running is
    stopped (its pid in pid_file, recognised by `owns`), the ports are checked free, `prepare` runs
    (config files, a fresh API port), the process is started in a session of its own with stdout
    and stderr appended to `log`, and the start returns once `ready` says so (within start_seconds)."""

    # Who it is in log lines ("edge nginx (127.0.0.1:8081)").
    name: str
    # A name looked up on PATH and in `search` (glob patterns allowed: /usr/lib/postgresql/*/bin), or a path.
    binary: str
    log: Path
    args: tuple[str, ...] = ()
    search: tuple[str, ...] = SBIN_DIRS
    # None: svc's own environment; a mapping: exactly that one (a process running others' code gets
    # only what it needs, never svc's secrets).
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    # Run as this user (its uid, primary group, no supplementary groups) when svc runs as root.
    user: str | None = None
    # A file svc opens (after `prepare`) as the process's standard input: a process running as
    # another user reads it there (/dev/stdin) with no path to it under svc's private data dir.
    stdin: Path | None = None
    ports: tuple[Port, ...] = ()
    # Polled until true (each call bounded by what is left of start_seconds); None: ready once started.
    ready: Callable[[], Awaitable[bool]] | None = None
    # Run before each start, after the port check; raises ProcessError (or OSError) to fail the start.
    prepare: Callable[[], Awaitable[None]] | None = None
    # Written with the child's pid at each start; read to find a process a killed svc left running.
    pid_file: Path | None = None
    # Whether the command line of the pid in pid_file is ours (a process of this data dir); default:
    # the same binary name and the same arguments.
    owns: Callable[[list[str]], bool] | None = None
    stop_signal: signal.Signals = signal.SIGTERM
    # Kill what is left of its process group once it is gone (nginx's workers outlive a killed master).
    kill_group: bool = False
    # Logs the process writes itself (nginx's error.log): read for errors, rotated with `log`.
    other_logs: tuple[Path, ...] = ()
    # The line of what it said that tells what went wrong.
    explain: Callable[[str], str] | None = None
    # Told how a run ended that nobody stopped (its exit status) before it is started again;
    # answers whether to start it again (False: the owner replaces it, supervision ends).
    on_exit: Callable[[int], Awaitable[bool]] | None = None
    start_seconds: float = 10.0
    stop_seconds: float = 5.0
    # How long a port may stay held by a process of ours on its way out.
    port_grace_seconds: float = 1.0
    min_backoff: float = 0.1
    max_backoff: float = 10.0
    # A run this long resets the backoff: a process that keeps dying young is restarted less and less often.
    steady_seconds: float = 60.0
    rotate_bytes: int = 10 * 1024 * 1024

    @property
    def logs(self) -> tuple[Path, ...]:
        return (self.log, *self.other_logs)

    def is_ours(self, cmdline: list[str]) -> bool:
        if self.owns is not None:
            return self.owns(cmdline)
        return bool(cmdline) and Path(cmdline[0]).name == Path(self.binary).name and cmdline[1:] == list(self.args)

    def reason(self, said: str) -> str:
        return (self.explain or telling_line)(said)


def _version_key(path: str) -> list[tuple[int, int | str]]:
    """Sort key reading digit runs as numbers: /usr/lib/postgresql/9.6 before .../15."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", path)]


def search_path(search: tuple[str, ...]) -> str:
    """PATH followed by the extra directories, glob patterns expanded (the highest version first)."""
    dirs = [os.environ.get("PATH", os.defpath)]
    for entry in search:
        if glob.has_magic(entry):
            dirs.extend(sorted(glob.glob(entry), key=_version_key, reverse=True))
        else:
            dirs.append(entry)
    return os.pathsep.join(dirs)


def find_binary(binary: str, search: tuple[str, ...] = SBIN_DIRS) -> str | None:
    """The executable: a name on PATH or in `search` (/usr/sbin, /usr/local/sbin by default), or a path; None."""
    if os.sep in binary:
        return binary if os.path.isfile(binary) and os.access(binary, os.X_OK) else None
    return shutil.which(binary, path=search_path(search))


def resolve_binary(binary: str, search: tuple[str, ...] = SBIN_DIRS, what: str | None = None) -> str:
    """find_binary, or MissingBinary."""
    found = find_binary(binary, search)
    if found is None:
        raise MissingBinary(binary, what)
    return found


# Severe first: a crash's own line beats the ordinary errors (an upstream that did not answer) before it.
_SEVERE = re.compile(r"fatal|\[emerg\]|\[alert\]|\[crit\]|panic|emergency", re.IGNORECASE)
_FAILED = re.compile(r"failed|unable|error|does not exist|exception|denied|not found|invalid|cannot|can't",
                     re.IGNORECASE)


def telling_line(said: str) -> str:
    """The line of a process's output that says what went wrong: the last severe one (fatal, nginx's
    emerg), else the last failed or error one, else the last line."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    for pattern in (_SEVERE, _FAILED):
        for line in reversed(lines):
            if pattern.search(line):
                return line
    return lines[-1] if lines else "it said nothing"
