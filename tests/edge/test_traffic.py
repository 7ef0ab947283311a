"""The edge's traffic as svc takes it (svc/edge/traffic.py), without nginx: the module's counts by
project, minute and status class, the log's lines as samples, a partial last line, and the move
aside of a full file while nginx still writes to it until it reopens its logs. (nginx's side, the
counting and the sampling, is in the end-to-end tests of the workers area.)"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from svc.edge import traffic
from svc.edge.traffic import TrafficLog, counts, samples

OWNERS = {"web.localhost": "prj_web", "api.localhost": "prj_api"}
MINUTE = 1_795_000_020  # a whole minute, in seconds


def line(seconds: float, status: int, host: str, path: str = "/", sent: int = 10) -> bytes:
    return f"{seconds:.3f} {status} {sent} 0.002 rid{int(seconds * 1000)} GET {host} {path}".encode()


def paths(log: TrafficLog) -> list[bytes]:
    """The paths of the lines added since the last read."""
    return [entry.split()[-1] for entry in log.read()]


def test_counts_are_summed_by_project_minute_and_status_class() -> None:
    m = MINUTE // 60
    text = "\n".join([f"c\tweb.localhost\t{m}\t2\t3", f"c\tweb.localhost\t{m}\t4\t1", f"b\tweb.localhost\t{m}\t300",
                      f"c\tweb.localhost\t{m + 1}\t5\t1", f"b\tweb.localhost\t{m + 1}\t10",
                      f"c\tapi.localhost\t{m}\t3\t2", f"c\tgone.localhost\t{m}\t2\t7",
                      f"c\tweb.localhost\t{m}\t9\t1", "c\tweb.localhost\tnot-a-minute\t2\t1", "garbage", ""])
    first = datetime.fromtimestamp(MINUTE, tz=UTC)
    second = datetime.fromtimestamp(MINUTE + 60, tz=UTC)
    assert counts(text, OWNERS.get) == {("prj_web", first): [3, 0, 1, 0, 300], ("prj_web", second): [0, 0, 0, 1, 10],
                                         ("prj_api", first): [0, 2, 0, 0, 0]}


def test_lines_are_sampled_per_project() -> None:
    lines = [line(MINUTE + 1, 200, "web.localhost"), line(MINUTE + 2, 404, "web.localhost", "/a b"),
             line(MINUTE + 3, 301, "api.localhost", sent=0), line(MINUTE + 4, 200, "gone.localhost"),
             b"cut off by a cra", b""]
    assert [(r.project_id, r.status, r.path, r.request_id) for r in samples(lines, OWNERS.get)] == [
        ("prj_web", 200, "/", f"rid{(MINUTE + 1) * 1000}"), ("prj_web", 404, "/a b", f"rid{(MINUTE + 2) * 1000}"),
        ("prj_api", 301, "/", f"rid{(MINUTE + 3) * 1000}")]
    many = [line(MINUTE + i / 1000, 200, "web.localhost") for i in range(traffic.SAMPLES_PER_PROJECT + 50)]
    assert len(samples(many, OWNERS.get)) == traffic.SAMPLES_PER_PROJECT


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
