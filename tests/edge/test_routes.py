"""The routing table as svc keeps it (no nginx): the changes that bring it to a wanted state, the
log on disk that an nginx starting in between reads, its folding into a snapshot, and a load of
what a previous run left."""

from __future__ import annotations

from pathlib import Path

from svc.edge.config import EdgeLayout
from svc.edge.routes import FLUSH, Entry, Kind, RouteTable

SITE = "/data/sites/" + "ab" * 32 + "/assets"


def _table(tmp_path: Path) -> RouteTable:
    layout = EdgeLayout(tmp_path / "edge")
    layout.root.mkdir(parents=True)
    return RouteTable(layout)


def test_changes_are_only_what_differs(tmp_path: Path) -> None:
    table = _table(tmp_path)
    web, locked = Entry(Kind.public, SITE), Entry(Kind.protected, SITE, 7)
    lines = table.changes({"web.localhost": web, "locked.localhost": locked, "Bad Host": web}, set())
    assert lines == [f"set\tweb.localhost\t1\t{SITE}", f"set\tlocked.localhost\t{2 + 32 * 7}\t{SITE}"]
    table.record(lines)
    assert table.changes({"web.localhost": web, "locked.localhost": locked}, set()) == []
    # A host no route names any more, in the scope looked at: removed; outside it: kept.
    assert table.changes({"web.localhost": web}, {"locked.localhost", "other.localhost"}) == ["del\tlocked.localhost"]
    assert table.changes({}, set()) == []


def test_the_log_is_read_after_the_snapshot_and_folded_into_it(tmp_path: Path) -> None:
    table = _table(tmp_path)
    layout = table.layout
    table.record([f"set\tweb.localhost\t1\t{SITE}", "set\tnew.localhost\t3\t/void/none"])
    table.compact()
    assert layout.routes_log.read_text() == ""
    table.record(["del\tnew.localhost", "set\tweb.localhost\t3\t/void/none"])
    # What nginx reads at a start in between: the snapshot, then the log.
    again = RouteTable(layout)
    again.load()
    assert again.hosts() == {"web.localhost"} and again.entry("web.localhost") == Entry(Kind.none, "/void/none")
    # A log longer than the table (and than 1,024 lines) is folded into the snapshot.
    for i in range(1100):
        table.record([f"set\tweb.localhost\t1\t{SITE}{i % 2}"])
    assert len(layout.routes_log.read_text().splitlines()) < 1024
    assert layout.routes.read_text().startswith("set\tweb.localhost\t1\t")


def test_everything_starts_with_a_flush(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.record([f"set\tb.localhost\t1\t{SITE}", "set\ta.localhost\t5\t/void/pending"])
    assert table.everything() == [FLUSH, "set\ta.localhost\t5\t/void/pending", f"set\tb.localhost\t1\t{SITE}"]
    table.record([FLUSH])
    assert table.hosts() == set()


def test_a_worker_rides_in_the_entry_and_survives_a_restart(tmp_path: Path) -> None:
    table = _table(tmp_path)
    worker = Entry(Kind.protected, SITE, 3, worker="dep_1.2", upstream="svc_worker_1")
    lines = table.changes({"api.localhost": worker}, set())
    assert lines == [f"set\tapi.localhost\t{2 + 16 + 32 * 3}\t{SITE}\tdep_1.2\tsvc_worker_1"]
    table.record(lines)
    again = RouteTable(table.layout)
    again.load()
    assert again.entry("api.localhost") == worker
    # A new key (a secret changed) is a change of the entry.
    assert table.changes({"api.localhost": Entry(Kind.protected, SITE, 3, "dep_1.3", "svc_worker_1")}, set()) == [
        f"set\tapi.localhost\t{2 + 16 + 32 * 3}\t{SITE}\tdep_1.3\tsvc_worker_1"]
