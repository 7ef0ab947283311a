"""`svc login --dev`, `whoami`, `logout`, the credential store and SVC_TOKEN."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

import httpx

from tests.cli.conftest import Cli, People, clean_env, uniq
from tests.support.ports import free_port


def test_dev_login_then_whoami_in_text_and_json(cli: Cli) -> None:
    subject = uniq("alice")
    r = cli.ok("login", "--dev", subject, "--name", "Alice A", "--email", f"{subject}@example.com")
    assert f"Signed in to {cli.api_url} as {subject}" in r.out

    text = cli.ok("whoami")
    assert subject in text.out and "Alice A" in text.out and f"{subject}@example.com" in text.out
    assert "admin" in text.out  # the personal org's row

    me = cli.ok("whoami", "--json").json()
    assert me["user"]["subject"] == subject and me["user"]["provider"] == "dev"
    assert me["user"]["name"] == "Alice A"
    assert [o["slug"] for o in me["orgs"] if o["personal"]] == [subject]


def test_login_json_and_outputs_never_show_the_session_token(cli: Cli) -> None:
    subject = uniq("tok")
    shown = cli.login(subject)
    assert set(shown) == {"apiUrl", "userId", "subject", "expiresAt"}
    assert shown["subject"] == subject and shown["apiUrl"] == cli.api_url
    token = json.loads(cli.credentials_file.read_text())["credentials"][cli.api_url]["token"]
    assert token.startswith("svc_ses_")
    for args in (("whoami",), ("whoami", "--json"), ("login", "--dev", subject), ("orgs", "list")):
        r = cli.ok(*args)
        assert token not in r.out and token not in r.err


def test_credentials_file_is_private_and_keyed_by_api_url(cli: Cli) -> None:
    shown = cli.login(uniq("perm"))
    f = cli.credentials_file
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert stat.S_IMODE(f.parent.stat().st_mode) == 0o700
    stored = json.loads(f.read_text())["credentials"]
    assert list(stored) == [cli.api_url]
    assert stored[cli.api_url]["userId"] == shown["userId"]
    # The same store answers for the address however it is spelled.
    spelled = cli.api_url.replace("http://", "HTTP://") + "/v1/"
    assert cli.ok("--api-url", spelled, "whoami", "--json").json()["user"]["id"] == shown["userId"]


def test_logout_removes_the_credential_and_whoami_then_fails(cli: Cli) -> None:
    cli.login(uniq("bye"))
    r = cli.ok("logout")
    assert "Signed out" in r.out
    assert cli.api_url not in json.loads(cli.credentials_file.read_text())["credentials"]
    cli.fails("not_signed_in", "whoami")
    cli.fails("not_signed_in", "whoami", "--json")
    again = cli.ok("logout", "--json").json()
    assert again == {"apiUrl": cli.api_url, "removed": False}


def test_svc_token_overrides_the_stored_session(people: People, server: str) -> None:
    me, other = people("me"), people("other")
    me.login(uniq("me"))
    r = httpx.post(f"{server}/v1/auth/dev/login", json={"subject": uniq("robot")})
    robot = r.json()
    as_robot = me.ok("whoami", "--json", env=me.env(SVC_TOKEN=robot["token"])).json()
    assert as_robot["user"]["id"] == robot["userId"]
    # Without any stored session at all, SVC_TOKEN alone is enough.
    assert other.ok("whoami", "--json", env=other.env(SVC_TOKEN=robot["token"])).json()["user"]["id"] == robot["userId"]
    bad = me.fails("unauthorized", "whoami", env=me.env(SVC_TOKEN="svc_ses_not-a-real-token"))
    assert "svc login" in bad.err  # the hint


def test_api_errors_print_message_and_code_to_stderr(cli: Cli) -> None:
    r = cli.fails("bad_request", "login", "--dev", "x" * 101)
    assert r.err.startswith("error: ")


def test_an_unreachable_api_exits_2_with_a_clear_message(cli: Cli) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    r = cli.fails("connection_failed", "--api-url", dead, "login", "--dev", "someone", exit_code=2)
    assert f"Cannot reach the svc API at {dead}" in r.err
    r = cli.fails("connection_failed", "whoami", "--json", exit_code=2, env=cli.env(SVC_API_URL=dead, SVC_TOKEN="x"))
    assert r.out == ""


def test_browser_login_needs_an_identity_provider_on_the_server(cli: Cli) -> None:
    r = cli.fails("no_identity_provider", "login", "--no-browser")
    assert "--dev" in r.err
    assert not cli.credentials_file.exists()


def test_bad_api_url_is_a_usage_error(cli: Cli) -> None:
    r = cli("--api-url", "ftp://example.com", "whoami")
    assert r.code == 2 and "http://" in r.err and r.out == ""


def test_the_client_never_loads_the_server() -> None:
    """The client speaks HTTP only: importing it (and every command) pulls in no server module."""
    code = ("import sys, svc.cli.main, svc.entry; "
            "print(' '.join(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'sqlalchemy', 'uvicorn') "
            "or m.startswith(('svc.app', 'svc.db', 'svc.domains', 'svc.models', 'svc.settings', "
            "'svc.operator.serve', 'svc.operator.admin'))))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=clean_env())
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ""
