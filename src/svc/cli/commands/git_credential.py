"""`svc git-credential`: git's credential helper for svc's git over HTTPS, so `git clone` works after
`svc login` with no token pasted anywhere.

git never takes the sign-in session (spec: git uses personal access tokens), so on the first `get`
the helper makes a token named for this machine with the stored session, keeps it beside the
session (0600, credentials.py) and hands it to git from then on. `erase` (git found it refused)
forgets it; the next `get` makes another. `svc git-credential install` writes the git setting
that names the helper for this svc's address only."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from svc.cli import credentials, output
from svc.cli.client import Api, CliError, state

ACTIONS = ("get", "store", "erase", "install")


def _asked() -> dict[str, str]:
    """git's request: key=value lines up to a blank line."""
    asked: dict[str, str] = {}
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            break
        key, _, value = line.partition("=")
        asked[key] = value
    return asked


def _same_site(api_url: str, asked: dict[str, str]) -> bool:
    """Whether git asks for this svc's address (the helper answers nothing for any other)."""
    api = urlsplit(api_url)
    default = {"http": 80, "https": 443}.get(api.scheme)
    netloc = api.hostname or ""
    if api.port and api.port != default:
        netloc = f"{netloc}:{api.port}"
    return asked.get("protocol") == api.scheme and asked.get("host", "").lower() == netloc.lower()


def git_credential(ctx: typer.Context, action: Annotated[str, typer.Argument(
        metavar="get|store|erase|install", help="What git asks (get, store, erase), or install: name this helper "
                                                 "in your git settings for this svc.")]) -> None:
    """git's credential helper: hands git a token for this svc, made once with your session."""
    if action not in ACTIONS:
        raise CliError(f"{action!r} is not one of {', '.join(ACTIONS)}", "bad_request")
    api_url = state(ctx).api_url
    if action == "install":
        _install(api_url)
        return
    asked = _asked()
    if action == "store" or not _same_site(api_url, asked):
        return  # git stores nothing here; another site is another helper's
    stored = credentials.load(api_url)
    if action == "erase":
        if stored is not None and stored.git_token:
            credentials.save(api_url, replace(stored, git_token=None))
        return
    if stored is None:
        raise CliError(f"Not signed in to {api_url}: run svc login first", "not_signed_in")
    token = stored.git_token
    if not token:
        with Api.for_context(ctx) as api:
            made = api.post("/v1/me/tokens", {"name": f"git on {socket.gethostname()}"[:100]})
        token = str(made["token"])
        credentials.save(api_url, replace(stored, git_token=token))
    sys.stdout.write(f"username=svc\npassword={token}\n")


def _install(api_url: str) -> None:
    git = shutil.which("git")
    if git is None:
        raise CliError("git is not installed here", "git_missing")
    svc = shutil.which("svc") or str(Path(sys.executable).parent / "svc")
    key = f"credential.{api_url.rstrip('/')}.helper"
    # Ours alone for this site: the empty value first clears the helpers git would otherwise try too.
    subprocess.run([git, "config", "--global", "--unset-all", key], check=False, capture_output=True)
    for value in ("", f"!{svc} --api-url {api_url} git-credential"):
        subprocess.run([git, "config", "--global", "--add", key, value], check=True)
    output.say(f"git now asks svc for a token for {api_url} (git config --global {key}).")
