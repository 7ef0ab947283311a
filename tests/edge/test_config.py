"""The config renderer: no host in it (the links say which host serves what), and its guards: what
cannot be written safely into nginx.conf is refused."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from svc.edge.config import (
    EdgeConfigError,
    EdgeLayout,
    EdgeOptions,
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


def test_the_config_holds_no_host(tmp_path: Path) -> None:
    """Which host serves what is in the routing table in nginx's memory: the config is the same
    whatever the store holds, so no deploy, rollback or policy change ever needs a reload."""
    layout = EdgeLayout(tmp_path / "edge")
    text = render(_options(check_cache_dir=tmp_path / "cache"), layout)
    assert render(_options(check_cache_dir=tmp_path / "cache"), layout) == text
    assert "svc_routes.lookup(ngx.arg[1])" in text
    assert f'svc_routes.load("{layout.routes}", "{layout.routes_log}")' in text
    # One server for every host, one for svc's changes of the routing table, one for the status probe.
    assert text.count("server_name") == 3 and "map $host" not in text
    # Another shape, another id.
    assert config_id(text) != config_id(render(_options(listen_port=18082, check_cache_dir=tmp_path / "cache"),
                                               layout))


def test_paths_nginx_cannot_quote_are_refused(tmp_path: Path) -> None:
    for name in ('we"ird', "doll$r", "back\\slash", "new\nline"):
        layout = EdgeLayout(tmp_path / name / "edge")
        with pytest.raises(EdgeConfigError):
            render(_options(), layout)
    with pytest.raises(EdgeConfigError):
        render(_options(api_url="https://svc.example.com"), EdgeLayout(tmp_path / "edge"))


def test_check_cache_only_in_memory_and_when_on(tmp_path: Path) -> None:
    layout = EdgeLayout(tmp_path / "edge")
    cache = tmp_path / "cache"
    text = render(_options(check_cache_dir=cache), layout)
    assert "proxy_cache_valid 204 5s;" in text
    assert f'proxy_cache_path "{cache}" ' in text
    # Keyed by the access generation and the live deployment, never by the site's own cookies.
    assert 'proxy_cache_key "$host|$svc_gen|$svc_root|$cookie_svc_access|$svc_check_bypass";' in text
    assert "proxy_cache " not in render(_options(check_cache_seconds=0, check_cache_dir=cache), layout)
    # No memory file system to keep it in: no cache.
    assert "proxy_cache" not in render(_options(), layout)


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
