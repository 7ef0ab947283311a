"""The edge's traffic: every request to a project host counted, some of them as lines.

- The counts: svc's nginx module counts every request to a routed host in nginx's memory, by host,
  minute and status class, with the body bytes (module/, the shared dictionary svc_traffic); svc
  collects them every second through the control server (GET /traffic: each count is taken away
  as it is read) and names each host's project as the routing table has it (`counts`).
- The lines: each nginx worker writes its first 100 requests a second of each host to EDGE/traffic.log
  (buffered, flushed every second); svc reads what was added since it last looked and keeps the
  first few per project as the projects' log lines (`samples`). The file is moved aside once it
  passes MAX_BYTES and nginx told to reopen it (SIGUSR1): it never grows without bound.

Both go to the TrafficSink as one batch (the workers area: the traffic chart's counts, the
projects' logs). (The log used to carry every request and svc counted its lines: about 1 us of
nginx's and 1 us of svc's CPU a request, against a few hundred nanoseconds for the module's
count.) The log's format is space-separated with the path last (nginx escapes quotes,
backslashes and bytes outside printable ASCII as \\xXX, so no field holds a space but the path).
A line or count svc cannot read is skipped; a host no longer routed is not counted."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from svc.adapters.edge.port import TrafficRecord

MAX_BYTES = 32 * 1024 * 1024
# What one read takes at most (a burst is read over several turns).
READ_BYTES = 4 * 1024 * 1024
# Lines kept per project and batch (about a second of traffic; an nginx worker writes at most 100 a
# second per host): the counts take every request.
SAMPLES_PER_PROJECT = 100
# ($request_id is replaced by config.request_id(): a cheaper id than nginx's own.)
LOG_FORMAT = "$msec $status $body_bytes_sent $request_time $request_id $request_method $svc_host $uri"


def samples(lines: list[bytes], owner: Callable[[str], str | None]) -> list[TrafficRecord]:
    """The first few lines per project, as records."""
    found: list[TrafficRecord] = []
    sampled: dict[str, int] = {}
    projects: dict[bytes, str | None] = {}
    for line in lines:
        fields = line.split(b" ", 7)
        if len(fields) != 8:
            continue
        host = fields[6]
        if host in projects:
            project_id = projects[host]
        else:
            project_id = projects[host] = owner(host.decode("ascii", errors="replace"))
        if project_id is None or sampled.get(project_id, 0) >= SAMPLES_PER_PROJECT:
            continue
        try:
            status, sent = int(fields[1]), int(fields[2])
        except ValueError:
            continue
        record = _record(fields, project_id, status, sent)
        if record is not None:
            sampled[project_id] = sampled.get(project_id, 0) + 1
            found.append(record)
    return found


def counts(text: str, owner: Callable[[str], str | None]) -> dict[tuple[str, datetime], list[int]]:
    """The module's counts as the control server hands them over, by project and minute:
    [2xx, 3xx, 4xx, 5xx, bytes] (lines "c<TAB>host<TAB>minute<TAB>class<TAB>n", "b<TAB>host<TAB>minute<TAB>bytes")."""
    by_minute: dict[tuple[str, int], list[int]] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        try:
            if fields[0] == "c" and len(fields) == 5:
                host, minute, column, value = fields[1], int(fields[2]), int(fields[3]) - 2, int(fields[4])
            elif fields[0] == "b" and len(fields) == 4:
                host, minute, column, value = fields[1], int(fields[2]), 4, int(fields[3])
            else:
                continue
        except ValueError:
            continue
        project_id = owner(host)
        if project_id is None or not 0 <= column <= 4 or value < 0:
            continue
        row = by_minute.setdefault((project_id, minute), [0, 0, 0, 0, 0])
        row[column] += value
    return {(project_id, datetime.fromtimestamp(minute * 60, tz=UTC)): row
            for (project_id, minute), row in by_minute.items()}


def _record(fields: list[bytes], project_id: str, status: int, sent: int) -> TrafficRecord | None:
    try:
        return TrafficRecord(
            at=datetime.fromtimestamp(float(fields[0]), tz=UTC), project_id=project_id, status=status,
            bytes_sent=sent, duration_ms=round(float(fields[3]) * 1000, 3), request_id=fields[4].decode()[:64],
            method=fields[5].decode()[:16], path=fields[7].decode(errors="replace")[:2048])
    except (ValueError, UnicodeDecodeError, OverflowError):
        return None


class TrafficLog:
    """Where svc stands in the edge's traffic log; `read` returns what was added since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rotated = path.with_name(path.name + ".1")
        self._offset: int | None = None
        # Where reading stood in the file moved aside: what nginx wrote there before it reopened
        # the log is read at the next turn.
        self._rotated_offset: int | None = None
        # The file's size at the last read.
        self._size = 0

    def start(self) -> None:
        """What the file held before this svc started was counted by the one before (or is lost
        with it): start at its end."""
        try:
            self._offset = self.path.stat().st_size
        except FileNotFoundError:
            self._offset = 0

    def read(self) -> list[bytes]:
        """The complete lines added since the last read (blocking: run it in a thread)."""
        if self._offset is None:
            self.start()
        leftover: list[bytes] = []
        if self._rotated_offset is not None:
            with open(self.rotated, "rb") as old:
                old.seek(self._rotated_offset)
                leftover = [line for line in old.read().split(b"\n") if line]
            self._rotated_offset = None
        try:
            with self.path.open("rb") as f:
                size = self._size = os.fstat(f.fileno()).st_size
                if size < (self._offset or 0):  # moved aside and made anew: from its start
                    self._offset = 0
                f.seek(self._offset or 0)
                data = f.read(READ_BYTES)
        except FileNotFoundError:
            return leftover
        end = data.rfind(b"\n")
        if end < 0:
            return leftover
        self._offset = (self._offset or 0) + end + 1
        return leftover + data[:end].split(b"\n")

    def take(self, owner: Callable[[str], str | None]) -> list[TrafficRecord]:
        """The sample of what was added since the last turn (blocking: run it in a thread)."""
        return samples(self.read(), owner)

    @property
    def full(self) -> bool:
        """Past MAX_BYTES and read to its end, as the last read saw it: to be moved aside."""
        return self._size > MAX_BYTES and self._offset == self._size

    def rotate(self) -> None:
        """Move the (fully read) file aside; nginx is then told to reopen it (a new, empty one)."""
        os.replace(self.path, self.rotated)
        self._rotated_offset = self._offset
        self._offset = 0
