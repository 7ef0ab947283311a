"""`svc login` through the browser: the loopback callback, with a real server and the fake identity provider.

The "browser" here is httpx following the same redirects a browser follows; where a browser would run
the loopback page's script, the test POSTs the URL fragment to the page's own path, as the script does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

from tests.cli.conftest import SVC, Cli, clean_env, process, running_server, uniq
from tests.support.ports import free_port

FORM = {"content-type": "application/x-www-form-urlencoded"}


@dataclass
class Idp:
    api_url: str
    fake_url: str


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Idp]:
    """The fake GitHub (a real HTTP server) and a svc that signs in through it, allowing loopback redirects."""
    work = tmp_path_factory.mktemp("svc-idp")
    port = free_port()
    fake = f"http://127.0.0.1:{port}"
    args = [sys.executable, "-m", "svc.adapters.idp.fake", "--port", str(port)]
    with process(args, clean_env(), work / "fake.log", f"{fake}/.well-known/openid-configuration"), \
            running_server(work, idp_provider="github", idp_client_id="svc-dev", idp_client_secret="svc-dev-secret",
                           idp_github_url=fake, idp_github_api_url=fake, idp_redirects="http://127.0.0.1") as url:
        yield Idp(api_url=url, fake_url=fake)


@dataclass
class PendingLogin:
    proc: subprocess.Popen[str]
    start_url: str
    redirect: str  # the loopback callback the page and its script live at

    def finish(self) -> tuple[int, str, str]:
        code = self.proc.wait(timeout=60)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        return code, self.proc.stdout.read(), self.proc.stderr.read()


@contextmanager
def pending_login(cli: Cli, *args: str) -> Iterator[PendingLogin]:
    """`svc login --no-browser` running; yields once it has printed the address to open."""
    proc = subprocess.Popen([SVC, "login", "--no-browser", *args], env=cli.env(), text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        while True:
            line = proc.stderr.readline()
            assert line, f"svc login ended before printing a URL: {''.join(seen)}"
            seen.append(line)
            if line.startswith("http"):
                break
        start = line.strip()
        redirect = parse_qs(urlsplit(start).query)["redirect"][0]
        yield PendingLogin(proc, start, redirect)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def browse(start: str, redirect: str, *, deny: bool = False) -> str:
    """Follow the browser's redirects from the start address; returns where it lands (fragment included)."""
    with httpx.Client(follow_redirects=False, timeout=30) as browser:
        url = start
        for _ in range(10):
            if url.startswith(redirect):
                return url
            if deny and "/login/oauth/authorize" in url:
                url += "&fake_action=deny"  # the fake's "Cancel" button
            r = browser.get(url)
            assert r.is_redirect, f"{url}: {r.status_code} {r.text}"
            url = urljoin(url, r.headers["location"])
    raise AssertionError("too many redirects")


def run_page_script(redirect: str, fragment: str) -> httpx.Response:
    """What the loopback page's script does with `location.hash`: POST it to its own path, same origin."""
    parts = urlsplit(redirect)
    origin = f"{parts.scheme}://{parts.netloc}"
    return httpx.post(redirect, content=fragment, headers={**FORM, "origin": origin}, timeout=30)


def test_browser_login_through_the_identity_provider(idp: Idp, tmp_path: Path) -> None:
    cli = Cli(idp.api_url, tmp_path / "home")
    with pending_login(cli) as login:
        assert login.start_url.startswith(f"{idp.api_url}/v1/auth/github/start?redirect=")
        assert login.redirect.startswith("http://127.0.0.1:")

        landed = browse(login.start_url, login.redirect)
        fragment = urlsplit(landed).fragment
        assert "token=" in fragment  # the session travels in the fragment only

        page = httpx.get(login.redirect, timeout=30)  # the browser loads the page (no fragment is sent)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "location.hash" in page.text and "fetch(" in page.text
        assert "script-src 'sha256-" in page.headers["content-security-policy"]

        answer = run_page_script(login.redirect, fragment)
        assert answer.status_code == 200 and answer.json()["ok"] is True
        code, out, err = login.finish()
    assert code == 0, err
    assert f"Signed in to {idp.api_url} as 1001 (Alice Example)" in out  # GitHub's subject is the account id
    token = parse_qs(fragment)["token"][0]
    assert token not in out and token not in err

    me = cli.ok("whoami", "--json").json()
    assert me["user"]["provider"] == "github" and me["user"]["name"] == "Alice Example"
    assert "Alice Example" in cli.ok("whoami").out


def test_loopback_takes_the_fragment_its_page_posts(idp: Idp, tmp_path: Path) -> None:
    """The brief's simulation: a session from dev login, handed over the way the page's script does."""
    cli = Cli(idp.api_url, tmp_path / "home")
    subject = uniq("loop")
    session: dict[str, Any] = httpx.post(f"{idp.api_url}/v1/auth/dev/login", json={"subject": subject}).json()
    fragment = httpx.QueryParams({k: session[k] for k in ("token", "expiresAt", "userId", "subject")})
    with pending_login(cli, "--json") as login:
        base = login.redirect.rsplit("/", 1)[0]
        # Another path (a guessed nonce) is not the callback: nothing is taken.
        assert httpx.post(f"{base}/guess", content=str(fragment), headers=FORM).status_code == 404
        assert httpx.get(f"{base}/guess").status_code == 404
        # Another web page cannot hand over a session.
        evil = httpx.post(login.redirect, content=str(fragment), headers={**FORM, "origin": "https://evil.example"})
        assert evil.status_code == 403
        # A token the API does not accept is refused, and the command keeps waiting.
        bogus = run_page_script(login.redirect, "token=svc_ses_bogus&subject=x")
        assert bogus.status_code == 400 and bogus.json()["ok"] is False
        assert login.proc.poll() is None

        assert run_page_script(login.redirect, str(fragment)).json()["ok"] is True
        code, out, err = login.finish()
    assert code == 0, err
    shown = json.loads(out)  # --json: the session without its token
    assert shown == {"apiUrl": idp.api_url, "userId": session["userId"], "subject": subject,
                     "expiresAt": session["expiresAt"]}
    assert cli.ok("whoami", "--json").json()["user"]["subject"] == subject


def test_a_refusal_at_the_provider_reaches_the_terminal(idp: Idp, tmp_path: Path) -> None:
    cli = Cli(idp.api_url, tmp_path / "home")
    with pending_login(cli) as login:
        landed = browse(login.start_url, login.redirect, deny=True)
        fragment = urlsplit(landed).fragment
        assert "error=" in fragment and "token=" not in fragment
        answer = run_page_script(login.redirect, fragment)
        assert answer.json()["ok"] is False
        code, out, err = login.finish()
    assert code == 1 and out == ""
    error = parse_qs(fragment)["error"][0]
    assert f"({error})" in err and err.startswith("error: ")
    assert not cli.credentials_file.exists()


def test_login_times_out_when_nothing_arrives(idp: Idp, tmp_path: Path) -> None:
    cli = Cli(idp.api_url, tmp_path / "home")
    r = cli.fails("login_timeout", "login", "--no-browser", "--timeout", "1")
    assert "/v1/auth/github/start?redirect=" in r.err  # the address was printed all the same
    assert not cli.credentials_file.exists()


def test_a_server_that_refuses_loopback_redirects_is_reported_at_once(idp: Idp, tmp_path: Path) -> None:
    # Same provider, but the operator left SVC_IDP_REDIRECTS at its default (the public URL only).
    with running_server(tmp_path, idp_provider="github", idp_client_id="svc-dev", idp_client_secret="svc-dev-secret",
                        idp_github_url=idp.fake_url, idp_github_api_url=idp.fake_url) as url:
        cli = Cli(url, tmp_path / "home")
        r = cli.fails("bad_request", "login", "--no-browser")
    assert "SVC_IDP_REDIRECTS" in r.err and "http://127.0.0.1" in r.err


def test_login_opens_the_browser_and_keeps_stdout_for_the_json(idp: Idp, tmp_path: Path) -> None:
    """Without --no-browser, `svc login` opens $BROWSER; a launcher's chatter goes to stderr, not stdout."""
    launcher = tmp_path / "browser"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).parent / "fake_browser.py"}" "$1"\n')
    launcher.chmod(0o755)
    cli = Cli(idp.api_url, tmp_path / "home")
    # A real process: the launcher is a child of `svc` and writes to the file descriptors it inherits.
    r = cli.process("login", "--json", "--timeout", "60", env=cli.env(BROWSER=str(launcher)))
    assert r.code == 0, r.err
    shown = json.loads(r.out)
    assert shown["subject"] == "1001" and shown["apiUrl"] == idp.api_url
    assert "Opening in existing browser session." in r.err
    assert cli.ok("whoami", "--json").json()["user"]["name"] == "Alice Example"
