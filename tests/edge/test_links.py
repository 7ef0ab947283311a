"""The host links on disk (no nginx): each change is one atomic rename, what a link leads to says
what the host is, links are never removed while nginx runs, and what nobody uses is cleaned up."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from svc.edge.config import EdgeLayout
from svc.edge.links import GATE_GRACE_SECONDS, HostLinks

DIGEST = "ab" * 32


def _setup(tmp_path: Path) -> tuple[EdgeLayout, HostLinks, Path]:
    layout = EdgeLayout(tmp_path / "edge")
    layout.prepare()
    site = tmp_path / "sites" / DIGEST / "assets"
    site.mkdir(parents=True)
    (site / "index.html").write_text("v1")
    return layout, HostLinks(layout), site


def test_a_link_leads_to_what_the_host_serves(tmp_path: Path) -> None:
    layout, links, site = _setup(tmp_path)
    assert links.point("web.localhost", site) is True
    assert (layout.hosts / "web.localhost" / "index.html").read_text() == "v1"
    assert links.point("web.localhost", site) is False  # nothing to change
    assert links.served_assets("web.localhost") == site
    # Nothing half-made is left beside it.
    assert [p.name for p in layout.hosts.iterdir()] == ["web.localhost"]

    links.forget("web.localhost")
    assert os.readlink(layout.hosts / "web.localhost") == str(layout.void_unknown)
    assert links.served_assets("web.localhost") is None
    for bad in ("../escape", "UPPER.localhost", ".hidden", "a/b"):
        with pytest.raises(ValueError):
            links.point(bad, site)


def test_a_gate_per_access_generation_and_deployment(tmp_path: Path) -> None:
    layout, links, site = _setup(tmp_path)
    gate = links.gate("prj_1", 3, site)
    assert gate == layout.gates / "prj_1" / f"3-{DIGEST}.gate"
    assert (gate / "assets" / "index.html").read_text() == "v1"
    assert links.gate("prj_1", 3, site) == gate  # made once
    assert links.gate("prj_1", 4, site) != gate  # a policy change: a new gate, a new cache key
    empty = links.gate("prj_1", 4, None)
    assert empty.name == "4-none.gate" and os.readlink(empty / "assets") == str(layout.void_none)
    links.point("priv.localhost", gate)
    assert links.served_assets("priv.localhost") == site
    with pytest.raises(ValueError):
        links.gate("../x", 1, site)


def test_load_reads_what_a_previous_run_left(tmp_path: Path) -> None:
    layout, links, site = _setup(tmp_path)
    links.point("web.localhost", site)
    (layout.hosts / ".web.localhost-123-boot-abc").symlink_to(site)  # a killed process's half-made link
    again = HostLinks(layout)
    again.load()
    assert again.hosts() == {"web.localhost"} and again.target("web.localhost") == str(site)
    assert not (layout.hosts / ".web.localhost-123-boot-abc").exists()


def test_prune(tmp_path: Path) -> None:
    layout, links, site = _setup(tmp_path)
    used = links.gate("prj_1", 2, site)
    links.point("priv.localhost", used)
    fresh = links.gate("prj_1", 1, site)
    old = links.gate("prj_2", 1, site)
    long_ago = time.time() - GATE_GRACE_SECONDS - 5
    os.utime(old, (long_ago, long_ago), follow_symlinks=False)
    links.point("gone.localhost", site)
    links.forget("gone.localhost")

    # While nginx runs: a request may just have resolved a gate or a link; only old gates go.
    links.prune(nginx_running=True)
    assert used.is_dir() and fresh.is_dir() and not old.exists() and not (layout.gates / "prj_2").exists()
    assert (layout.hosts / "gone.localhost").is_symlink()
    # Before nginx starts: every unused gate, and the links of hosts nobody routes.
    links.prune(nginx_running=False)
    assert used.is_dir() and not fresh.exists()
    assert not (layout.hosts / "gone.localhost").is_symlink() and links.hosts() == {"priv.localhost"}
