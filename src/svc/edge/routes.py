"""The edge's routing table as svc keeps it: one entry per host (its kind and the directory it
serves), mirrored into nginx's shared dictionary `svc_routes` (lua/svc_routes.lua), which nginx
reads on every request. Changing a host is one entry replaced in nginx's memory: no reload.

On disk, for nginx's (re)starts and reloads, which read both: EDGE/routes, a snapshot, and
EDGE/routes.log, the changes since, one line each (the format of lua/svc_routes.lua). A change is
appended to the log before it is sent to nginx, so an nginx started in between has it anyway;
the log is folded into a new snapshot (`compact`) once it is longer than the table."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from enum import IntEnum

from svc.edge.config import EdgeLayout
from svc.kit.files import fsync_dir, partial_name
from svc.kit.hosts import valid_host


class Kind(IntEnum):
    """What a host is (the low four bits of an entry's flags in nginx)."""

    public = 1
    protected = 2
    none = 3
    protected_none = 4
    pending = 5


KINDS = 16
# Flags: the kind (low four bits), WORKER when the host has a worker, then the access generation.
WORKER = 16
GENERATIONS = 32


@dataclass(frozen=True)
class Entry:
    kind: Kind
    # The directory served: a site's assets/, or one of the edge's empty void/ directories.
    root: str
    # A protected project's access generation (in the check cache's key); 0 otherwise.
    generation: int = 0
    # The live deployment's worker: its key in the runtime and the upstream (nginx's name of the
    # workerd process) that serves it; "" for a static site.
    worker: str = ""
    upstream: str = ""

    @property
    def flags(self) -> int:
        return int(self.kind) + (WORKER if self.worker else 0) + GENERATIONS * self.generation

    def line(self, host: str) -> str:
        if self.worker:
            return f"set\t{host}\t{self.flags}\t{self.root}\t{self.worker}\t{self.upstream}"
        return f"set\t{host}\t{self.flags}\t{self.root}"


def deletion(host: str) -> str:
    return f"del\t{host}"


FLUSH = "flush"


def _parse(line: str) -> tuple[str, Entry | None] | None:
    """(host, entry or None for a deletion) of a change line; None for a flush or a bad line."""
    fields = line.split("\t")
    if fields[0] == "set" and len(fields) in (4, 6) and fields[2].isdigit():
        flags = int(fields[2])
        try:
            kind = Kind(flags % KINDS)
        except ValueError:
            return None
        worker, upstream = (fields[4], fields[5]) if len(fields) == 6 else ("", "")
        return fields[1], Entry(kind, fields[3], flags // GENERATIONS, worker, upstream)
    if fields[0] == "del" and len(fields) == 2:
        return fields[1], None
    return None


class RouteTable:
    """svc's side of the table: what nginx has (or gets at its next start), kept in memory."""

    def __init__(self, layout: EdgeLayout) -> None:
        self.layout = layout
        self._entries: dict[str, Entry] = {}
        self._logged = 0

    def load(self) -> None:
        """Read the table a previous run left on disk (nginx serves it until the first converge)."""
        self._entries = {}
        self._logged = 0
        for path in (self.layout.routes, self.layout.routes_log):
            with contextlib.suppress(FileNotFoundError), path.open(encoding="utf-8") as file:
                for line in file:
                    self._apply(line.rstrip("\n"))
                    self._logged += path == self.layout.routes_log

    def hosts(self) -> set[str]:
        return set(self._entries)

    def entry(self, host: str) -> Entry | None:
        return self._entries.get(host)

    def changes(self, wanted: dict[str, Entry], gone: set[str]) -> list[str]:
        """The change lines that bring the table to `wanted` (host: entry) and remove `gone`."""
        lines = [entry.line(host) for host, entry in wanted.items()
                 if valid_host(host) and self._entries.get(host) != entry]
        lines += [deletion(host) for host in sorted(gone) if host in self._entries and host not in wanted]
        return lines

    def everything(self) -> list[str]:
        """The whole table as change lines after a flush (for an nginx that missed changes)."""
        return [FLUSH, *(entry.line(host) for host, entry in sorted(self._entries.items()))]

    def record(self, lines: list[str]) -> None:
        """Apply changes here and append them to the log (before nginx is told)."""
        if not lines:
            return
        with self.layout.routes_log.open("a", encoding="utf-8") as log:
            log.write("".join(f"{line}\n" for line in lines))
        for line in lines:
            self._apply(line)
        self._logged += len(lines)
        if self._logged > max(1024, len(self._entries)):
            self.compact()

    def compact(self) -> None:
        """A new snapshot of the table, and an empty log (an nginx reading them in between reads
        the new snapshot and changes it already holds: the same table)."""
        temp = self.layout.root / partial_name(".routes")
        with temp.open("w", encoding="utf-8") as file:
            file.write("".join(f"{entry.line(host)}\n" for host, entry in sorted(self._entries.items())))
        os.replace(temp, self.layout.routes)
        fsync_dir(self.layout.root)
        self.layout.routes_log.write_text("", encoding="utf-8")
        self._logged = 0

    def _apply(self, line: str) -> None:
        if line == FLUSH:
            self._entries = {}
            return
        parsed = _parse(line)
        if parsed is None:
            return
        host, entry = parsed
        if entry is None:
            self._entries.pop(host, None)
        else:
            self._entries[host] = entry

