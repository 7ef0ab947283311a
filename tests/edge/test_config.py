"""The config renderer: no host in it (the links say which host serves what), and its guards: what
cannot be written safely into nginx.conf is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.edge.config import (
    EdgeConfigError,
    EdgeLayout,
    EdgeOptions,
    config_id,
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
    text = render(_options(), layout)
    assert render(_options(), layout) == text
    assert "svc_routes_unknown_root" in text and "set_by_lua" not in text
    assert f'svc_routes.load("{layout.routes}", "{layout.routes_log}")' in text
    # One server for every host, one for svc's changes of the routing table, one for the status probe.
    assert text.count("server_name") == 3 and "map $host" not in text
    # Another shape, another id.
    assert config_id(text) != config_id(render(_options(listen_port=18082), layout))


def test_paths_nginx_cannot_quote_are_refused(tmp_path: Path) -> None:
    for name in ('we"ird', "doll$r", "back\\slash", "new\nline"):
        layout = EdgeLayout(tmp_path / name / "edge")
        with pytest.raises(EdgeConfigError):
            render(_options(), layout)
    with pytest.raises(EdgeConfigError):
        render(_options(api_url="https://svc.example.com"), EdgeLayout(tmp_path / "edge"))


def test_check_cache_only_in_memory_and_when_on(tmp_path: Path) -> None:
    """The check cache is nginx's shared memory: no file, no cache path; off, no dictionary."""
    layout = EdgeLayout(tmp_path / "edge")
    text = render(_options(), layout)
    assert "lua_shared_dict svc_check 4m;" in text
    assert "svc_routes.check_seconds = 5" in text
    assert "proxy_cache" not in text
    off = render(_options(check_cache_seconds=0), layout)
    assert "svc_check " not in off and "svc_routes.check_seconds = 0" in off


def test_prepare_installs_the_pages_and_drops_the_old_disk_cache(tmp_path: Path) -> None:
    layout = EdgeLayout(tmp_path / "edge")
    old = layout.root / "check-cache" / "a" / "bc"
    old.mkdir(parents=True)
    (old / "entry").write_text("KEY: host|1|session=APPSECRET; svc_access=x|byp")
    layout.prepare()
    assert not (layout.root / "check-cache").exists()
    assert {p.name for p in layout.pages.iterdir()} == {"unknown-host.html", "no-deployment.html", "not-found.html"}
    assert "svc deploy" in (layout.pages / "no-deployment.html").read_text()
