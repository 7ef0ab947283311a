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


def test_tls_holds_no_certificate_in_the_config(tmp_path: Path) -> None:
    """Certificates are a table in nginx's memory (tls.py): the config is the same for 1 or 1,000,
    so a new certificate never reloads nginx."""
    layout = EdgeLayout(tmp_path / "edge")
    text = render(_options(tls_port=18443), layout)
    assert text.count("ssl_certificate_by_lua_block") == 1 and text.count("listen 127.0.0.1:18443 ssl") == 1
    assert f'svc_tls.load("{layout.certs}/table")' in text and "lua_shared_dict svc_certs" in text
    assert "svc_tls" not in render(_options(), layout)


def test_hsts_only_when_the_operator_turns_it_on_and_only_over_https(tmp_path: Path) -> None:
    layout = EdgeLayout(tmp_path / "edge")
    assert "Strict-Transport-Security" not in render(_options(tls_port=18443), layout)
    # Without TLS there is nothing to send it on.
    assert "Strict-Transport-Security" not in render(_options(hsts_seconds=600), layout)
    text = render(_options(tls_port=18443, hsts_seconds=600), layout)
    assert 'on "max-age=600";' in text and "map $https $svc_hsts" in text
    # Beside every add_header of the sites' locations (a location's own add_header drops the server's).
    assert text.count("add_header Strict-Transport-Security $svc_hsts always;") == text.count(
        "add_header Cache-Control")


def test_the_console_host_is_fronted_over_http_and_https(tmp_path: Path) -> None:
    text = render(_options(tls_port=18443, console_host="svc.apps.test"), EdgeLayout(tmp_path / "edge"))
    assert text.count('server_name "svc.apps.test";') == 2  # http and https
    assert "svc_console_connection" in text
    # Without TLS: http only.
    other = render(_options(console_host="svc.example.org"), EdgeLayout(tmp_path / "edge"))
    assert other.count('server_name "svc.example.org";') == 1


def test_the_certificates_table_and_its_changes(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from svc.adapters.edge.port import ServedCertificate
    from svc.edge import tls

    end = datetime(2026, 12, 1, tzinfo=UTC)  # each line carries its certificate's notAfter
    root = tmp_path / "certs"
    root.mkdir()
    (root / "0123.pem").write_text("an earlier version's file")
    one = ServedCertificate("*.Apps.test", "CHAIN", "KEY", not_after=end)
    lines = tls.write_table(root, [one, ServedCertificate("www.shop.test", "C2", "K2", ocsp_der=b"\x30\x03",
                                                          not_after=end)])
    assert sorted(p.name for p in root.iterdir()) == ["placeholder.key", "placeholder.pem", "table"]
    assert root.stat().st_mode & 0o777 == 0o700 and all(p.stat().st_mode & 0o077 == 0 for p in root.iterdir())
    assert list(lines) == ["*.apps.test", "www.shop.test"]
    assert lines["*.apps.test"] == "set\t*.apps.test\t1796083200\tQ0hBSU4=\tS0VZ"
    assert lines["www.shop.test"].endswith("\tMAM=")
    assert (root / "table").read_text() == "".join(f"{line}\n" for line in lines.values())
    # Only what changed is sent: a renewal, a certificate gone.
    after = tls.write_table(root, [ServedCertificate("*.apps.test", "CHAIN2", "KEY2", not_after=end)])
    assert tls.changes(lines, after) == [after["*.apps.test"], "del\twww.shop.test"]
    assert tls.changes(after, after) == []
    with pytest.raises(ValueError):
        tls.line(ServedCertificate("bad name\tx", "C", "K", not_after=end))
