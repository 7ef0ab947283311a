"""The config renderer's guards: what cannot be written safely into nginx.conf is left out or refused."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from svc.edge.config import (
    EdgeConfigError,
    EdgeLayout,
    EdgeOptions,
    SiteRoute,
    config_id,
    memory_dir,
    new_check_cache_dir,
    remove_check_cache_dir,
    render,
)


def _options(**kw: object) -> EdgeOptions:
    values: dict[str, object] = dict(listen_host="127.0.0.1", listen_port=18081, api_url="http://127.0.0.1:8080",
                                     check_cache_seconds=5)
    return EdgeOptions(**(values | kw))  # type: ignore[arg-type]


def test_only_valid_host_names_are_routed(tmp_path: Path) -> None:
    layout = EdgeLayout(tmp_path / "edge")
    routes = [SiteRoute(host=h, web_root=tmp_path / "site", protected=False, access_generation=1)
              for h in ("web-alice.localhost", "bad host;", "x.localhost;evil_directive on", "UPPER.localhost",
                        "*.wild.localhost", "a" * 64 + ".localhost")]
    text = render(_options(), layout, routes)
    assert "web-alice.localhost" in text
    for bad in ("bad host", "evil_directive", "UPPER", "*.wild", "a" * 64):
        assert bad not in text
    # Same input, same text and id; another input, another id.
    assert render(_options(), layout, routes) == text
    other = SiteRoute(host="new.localhost", web_root=None, protected=False, access_generation=1)
    assert config_id(text) != config_id(render(_options(), layout, [*routes[:1], other]))


def test_paths_nginx_cannot_quote_are_refused(tmp_path: Path) -> None:
    for name in ('we"ird', "doll$r", "back\\slash", "new\nline"):
        layout = EdgeLayout(tmp_path / name / "edge")
        with pytest.raises(EdgeConfigError):
            render(_options(), layout, [])
    with pytest.raises(EdgeConfigError):
        render(_options(api_url="https://svc.example.com"), EdgeLayout(tmp_path / "edge"), [])


def test_check_cache_and_protected_block_only_when_needed(tmp_path: Path) -> None:
    layout = EdgeLayout(tmp_path / "edge")
    cache = tmp_path / "cache"
    public = SiteRoute(host="web-a.localhost", web_root=tmp_path, protected=False, access_generation=1)
    locked = SiteRoute(host="priv-a.localhost", web_root=tmp_path, protected=True, access_generation=7)
    assert "auth_request" not in render(_options(check_cache_dir=cache), layout, [public])
    text = render(_options(check_cache_dir=cache), layout, [public, locked])
    assert "server_name priv-a.localhost;" in text
    assert "priv-a.localhost 7;" in text
    assert "proxy_cache_valid 204 5s;" in text
    assert f'proxy_cache_path "{cache}" ' in text
    assert "proxy_cache " not in render(_options(check_cache_seconds=0, check_cache_dir=cache), layout,
                                        [public, locked])
    # No memory file system to keep it in: no cache.
    assert "proxy_cache" not in render(_options(), layout, [public, locked])


def test_prepare_installs_the_pages_and_drops_the_old_disk_cache(tmp_path: Path) -> None:
    layout = EdgeLayout(tmp_path / "edge")
    old = layout.root / "check-cache" / "a" / "bc"
    old.mkdir(parents=True)
    (old / "entry").write_text("KEY: host|1|session=APPSECRET; svc_access=x|byp")
    layout.prepare()
    assert not (layout.root / "check-cache").exists()
    assert {p.name for p in layout.pages.iterdir()} == {"unknown-host.html", "no-deployment.html", "not-found.html"}
    assert "svc deploy" in (layout.pages / "no-deployment.html").read_text()


def test_check_cache_dir_is_private_and_in_memory(tmp_path: Path) -> None:
    base = memory_dir()
    if base is None:
        pytest.skip("no memory file system here")
    edge_root = tmp_path / "edge"
    first = new_check_cache_dir(edge_root)
    assert first is not None and first.parent == base
    assert stat.S_IMODE(first.stat().st_mode) == 0o700
    (first / "left-behind").write_text("x")
    try:
        # The next start on the same data dir replaces what a killed one left.
        again = new_check_cache_dir(edge_root)
        assert again == first and list(again.iterdir()) == []
    finally:
        remove_check_cache_dir(first)
    assert not first.exists()


def test_pending_hosts_get_their_own_block_and_no_web_root(tmp_path: Path) -> None:
    layout = EdgeLayout(tmp_path / "edge")
    live = SiteRoute(host="web-a.localhost", web_root=tmp_path / "site", protected=False, access_generation=1)
    pending = SiteRoute(host="www.example.com", web_root=None, protected=False, access_generation=0, pending=True)
    without = render(_options(), layout, [live])
    assert "/v1/edge/pending-host" not in without
    text = render(_options(), layout, [live, pending])
    assert "server_name www.example.com;" in text and "/v1/edge/pending-host" in text
    # Never in the web-root map: a pending host serves nothing of its project.
    root_map = text.split("map $host $svc_root {", 1)[1].split("}", 1)[0]
    assert "web-a.localhost" in root_map and "www.example.com" not in root_map
