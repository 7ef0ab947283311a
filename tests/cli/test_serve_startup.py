"""`svc serve` that cannot start says why in one line and exits non-zero, no traceback: the edge
port taken by another program, the SQLite data directory served by another `svc serve`."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import SVC, clean_env, process
from tests.support import components
from tests.support.pdns import PDNS_REQUIRED, free_dns_port
from tests.support.ports import free_port

# Well within this, a failing start exits (nginx itself would retry binding for ~2.5 s, then the
# supervisor would start it again, endlessly).
EXIT_SECONDS = 60


def _serve(data_dir: Path, api_port: int, edge_port: int) -> list[str]:
    return [SVC, "serve", "--host", "127.0.0.1", "--port", str(api_port), "--edge-port", str(edge_port)]


def _env(data_dir: Path, api_port: int) -> dict[str, str]:
    return clean_env() | {"SVC_DATA_DIR": str(data_dir), "SVC_ENABLE_DEV_AUTH": "true",
                          "SVC_PUBLIC_URL": f"http://127.0.0.1:{api_port}", "SVC_DNS_PORT": str(free_dns_port())}


def _run_until_exit(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=EXIT_SECONDS,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"svc serve did not exit: {exc.stdout!r} {exc.stderr!r}")


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@components.NGINX
def test_edge_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        edge_port = other.getsockname()[1]
        api_port = free_port()
        done = _run_until_exit(_serve(tmp_path / "data", api_port, edge_port), _env(tmp_path / "data", api_port))
        # Still held by the other program: svc did not take it over.
        assert other.getsockname()[1] == edge_port
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output
    lines = _error_lines(output)
    assert len(lines) == 1, output
    assert f"127.0.0.1:{edge_port}" in lines[0] and "--edge-port" in lines[0], lines
    # The API never came up.
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", api_port)) != 0


def test_data_dir_in_use(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first_port = free_port()
    first = [*_serve(data_dir, first_port, free_port()), "--log-level", "warning"]
    with process(first, _env(data_dir, first_port), tmp_path / "first.log", f"http://127.0.0.1:{first_port}/v1/config"):
        second_port = free_port()
        done = _run_until_exit(_serve(data_dir, second_port, free_port()), _env(data_dir, second_port))
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output
    lines = _error_lines(output)
    assert len(lines) == 1, output
    assert str(data_dir) in lines[0], lines
    assert "Application startup failed" not in output
    # Checked before anything is said: no addresses printed as if it were starting.
    assert "dashboard:" not in output and "API:" not in output, output
    # The first start made its brand-new data folder private itself: nothing to warn about.
    assert "readable by other users" not in (tmp_path / "first.log").read_text()


def test_a_bad_setting_stops_the_start_in_one_line(tmp_path: Path) -> None:
    """Settings are read once at start and checked then, the foundation's, each component's and
    each area's own (the identity and invites areas', the edge's): a bad value names its variable,
    every bad one at once in one line, and nothing starts."""
    api_port = free_port()
    bad = {"SVC_SESSION_DAYS": ("0", "greater than or equal to 1"), "SVC_INVITE_DAYS": ("soon", "valid integer"),
           "SVC_JOB_POLL_SECONDS": ("now", "valid number"), "SVC_EDGE_TLS_PORT": ("https", "valid integer")}
    for given in [{name: bad[name]} for name in bad] + [bad]:
        env = _env(tmp_path / "data", api_port) | {name: value for name, (value, _) in given.items()}
        done = _run_until_exit(_serve(tmp_path / "data", api_port, free_port()), env)
        output = done.stdout + done.stderr
        assert done.returncode != 0, output
        assert "Traceback" not in output
        lines = _error_lines(output)
        assert len(lines) == 1, output
        assert all(name in lines[0] and said in lines[0] for name, (_, said) in given.items()), output


@PDNS_REQUIRED
def test_asking_its_own_nameserver_for_proof_is_refused(tmp_path: Path) -> None:
    """Without SVC_TRUST_OWN_ZONES, svc's own answers never prove a name: a resolver setting that
    names its own PowerDNS stops the start, in one line saying what to do."""
    api_port = free_port()
    env = _env(tmp_path / "data", api_port)
    env |= {"SVC_TRUST_OWN_ZONES": "false", "SVC_DNS_RESOLVER": f"127.0.0.1:{env['SVC_DNS_PORT']}"}
    done = _run_until_exit(_serve(tmp_path / "data", api_port, free_port()), env)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output, output
    lines = _error_lines(output)
    assert len(lines) == 1 and "SVC_DNS_RESOLVER" in lines[0] and "SVC_TRUST_OWN_ZONES" in lines[0], output


def test_an_empty_billing_webhook_secret_stops_the_start_in_one_line(tmp_path: Path) -> None:
    """`SVC_BILLING_WEBHOOK_SECRET=` (set, empty) keys no signature: with the fake billing (which
    makes a secret only when the setting is unset) svc says so in one line naming the setting."""
    api_port = free_port()
    env = _env(tmp_path / "data", api_port) | {"SVC_BILLING": "fake", "SVC_BILLING_WEBHOOK_SECRET": ""}
    done = _run_until_exit(_serve(tmp_path / "data", api_port, free_port()), env)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output, output
    lines = _error_lines(output)
    assert len(lines) == 1 and "SVC_BILLING_WEBHOOK_SECRET is set but empty" in lines[0], output
    assert "dashboard:" not in output, output  # checked before anything starts
