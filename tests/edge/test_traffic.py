"""The edge's traffic log as svc follows it (svc/edge/traffic.py), without nginx: counting lines
by project, minute and status class, the samples, a partial last line, and the move aside of a
full file while nginx still writes to it until it reopens its logs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from svc.edge import traffic
from svc.edge.traffic import TrafficLog, tally

OWNERS = {"web.localhost": "prj_web", "api.localhost": "prj_api"}
MINUTE = 1_795_000_020  # a whole minute, in seconds


def line(seconds: float, status: int, host: str, path: str = "/", sent: int = 10) -> bytes:
    return f"{seconds:.3f} {status} {sent} 0.002 rid{int(seconds * 1000)} GET {host} {path}".encode()


def paths(log: TrafficLog) -> list[bytes]:
    """The paths of the lines added since the last read."""
    return [entry.split()[-1] for entry in log.read()]


def test_lines_are_counted_by_project_minute_and_status_class() -> None:
    lines = [line(MINUTE + 1, 200, "web.localhost"), line(MINUTE + 2, 404, "web.localhost", "/a b"),
             line(MINUTE + 61, 503, "web.localhost"), line(MINUTE + 3, 301, "api.localhost", sent=0),
             line(MINUTE + 4, 200, "gone.localhost"), b"cut off by a cra", b""]
    batch = tally(lines, OWNERS.get)
    first = datetime.fromtimestamp(MINUTE, tz=UTC)
    second = datetime.fromtimestamp(MINUTE + 60, tz=UTC)
    assert batch.counts == {("prj_web", first): [1, 0, 1, 0, 20], ("prj_web", second): [0, 0, 0, 1, 10],
                            ("prj_api", first): [0, 1, 0, 0, 0]}
    assert [(r.project_id, r.status, r.path, r.request_id) for r in batch.samples] == [
        ("prj_web", 200, "/", f"rid{(MINUTE + 1) * 1000}"), ("prj_web", 404, "/a b", f"rid{(MINUTE + 2) * 1000}"),
        ("prj_web", 503, "/", f"rid{(MINUTE + 61) * 1000}"), ("prj_api", 301, "/", f"rid{(MINUTE + 3) * 1000}")]


def test_samples_are_capped_per_project_and_counts_are_not() -> None:
    lines = [line(MINUTE + i / 1000, 200, "web.localhost") for i in range(traffic.SAMPLES_PER_PROJECT + 50)]
    batch = tally(lines, OWNERS.get)
    assert len(batch.samples) == traffic.SAMPLES_PER_PROJECT
    assert batch.counts[("prj_web", datetime.fromtimestamp(MINUTE, tz=UTC))][0] == traffic.SAMPLES_PER_PROJECT + 50


def test_reading_follows_the_file_and_a_move_aside_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "traffic.log"
    path.write_bytes(line(MINUTE, 200, "web.localhost", "/before") + b"\n")
    log = TrafficLog(path)
    log.start()  # what was there before svc started is not counted again
    with path.open("ab") as nginx:
        nginx.write(line(MINUTE + 1, 200, "web.localhost", "/one") + b"\n" + b"1795000021.000 200 1")
        nginx.flush()
        assert paths(log) == [b"/one"]  # the partial line waits
        nginx.write(b"0 0.002 rid GET web.localhost /two\n")
        nginx.flush()
        assert paths(log) == [b"/two"]
        log.rotate()
        # nginx writes to the moved file until it reopens its logs (SIGUSR1) ...
        nginx.write(line(MINUTE + 2, 200, "web.localhost", "/late") + b"\n")
        nginx.flush()
    # ... then to a new one.
    path.write_bytes(line(MINUTE + 3, 200, "web.localhost", "/new") + b"\n")
    assert paths(log) == [b"/late", b"/new"]
    assert log.read() == []
