"""`svc login`, `svc logout`, `svc whoami`."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlencode

import typer

from svc.cli import credentials, output
from svc.cli.client import Api, ApiError, CliError, decode, env_token, seg, state
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console


def login(
    ctx: typer.Context,
    dev: Annotated[str | None, typer.Option("--dev", metavar="SUBJECT",
                                            help="Dev login as SUBJECT (servers with SVC_ENABLE_DEV_AUTH on).")] = None,
    email: Annotated[str | None, typer.Option(metavar="EMAIL", help="With --dev: the user's email.")] = None,
    name: Annotated[str | None, typer.Option(help="With --dev: the user's display name.")] = None,
    no_browser: Annotated[bool, typer.Option("--no-browser",
                                             help="Do not open a browser; only print the address.")] = False,
    timeout: Annotated[float, typer.Option(min=1, metavar="SECONDS",
                                            help="Seconds to wait for the browser sign-in.")] = 300,
    as_json: JsonFlag = False,
) -> None:
    """Sign in to the API and store the session for this API address."""
    url = state(ctx).api_url
    with Api.anonymous(ctx) as api:
        if dev is not None:
            body: dict[str, Any] = {"subject": dev}
            if email:
                body["email"] = email
            if name:
                body["name"] = name
            session = api.post("/v1/auth/dev/login", body, auth=False)
        else:
            if email or name:
                raise typer.BadParameter("--email and --name go with --dev")
            session = _browser_login(api, no_browser=no_browser, timeout=timeout)
    cred = credentials.Credential(token=str(session["token"]), user_id=session.get("userId"),
                                  subject=session.get("subject"), expires_at=session.get("expiresAt"))
    try:
        credentials.save(url, cred)
    except OSError as exc:
        raise CliError(f"Cannot store the session in {credentials.path()}: {exc.strerror}", "credentials_unwritable",
                       hint="set XDG_CONFIG_HOME to a writable directory, or use SVC_TOKEN") from None
    if env_token():
        output.note("warning: SVC_TOKEN is set; it overrides the stored session until you unset it.")
    shown = {"apiUrl": url, "userId": cred.user_id, "subject": cred.subject, "expiresAt": cred.expires_at}
    display_name = session.get("name") or name
    named = f" ({display_name})" if display_name else ""
    output.emit_line(as_json, shown, "Signed in to ", (url, "bold"), " as ", (cred.subject or "?", "bold"), named,
                     f"; the session lasts until {output.when(cred.expires_at) or 'unknown'}.")


def _browser_login(api: Api, *, no_browser: bool, timeout: float) -> dict[str, Any]:
    config = api.get("/v1/config", auth=False)
    idp = config.get("identityProvider") if isinstance(config, dict) else None
    if not idp:
        raise CliError(f"The server at {api.base_url} has no identity-provider sign-in configured",
                       "no_identity_provider", hint="use `svc login --dev SUBJECT` if the server has dev login on")
    from svc.cli.loopback import LoopbackLogin  # a local HTTP server: only for this way of signing in

    me: dict[str, Any] = {}

    def verify(fields: dict[str, str]) -> tuple[bool, str]:
        try:
            with Api(api.base_url, fields["token"], origin=api.origin) as check:
                me.update(check.get("/v1/me"))
        except CliError as exc:
            return False, f"The svc API did not accept this sign-in: {exc.message}"
        return True, "Signed in. You can close this tab and return to your terminal."

    with LoopbackLogin(verify) as loop:
        start_path = f"/v1/auth/{seg(idp)}/start"
        query = urlencode({"redirect": loop.url})
        _check_start(api, start_path, loop.url)
        start_url = f"{api.base_url}{start_path}?{query}"
        output.note("Open this address in a browser to sign in:")
        print(start_url, file=sys.stderr, flush=True)
        if not no_browser and not _open_browser(start_url):
            output.note("(could not open a browser; open the address above yourself)")
        with output.err().status("Waiting for the browser sign-in (Ctrl+C to cancel)..."):
            outcome = loop.wait(timeout)
    if outcome is None:
        raise CliError(f"No sign-in arrived within {timeout:g} seconds", "login_timeout",
                       hint="run `svc login` again")
    if outcome.error_code:
        raise CliError(outcome.error_message or "Sign-in failed", outcome.error_code)
    fields = outcome.fields
    user = me.get("user") or {}
    # Who the token belongs to is what /v1/me said, not what the fragment claims.
    return {"token": fields["token"], "expiresAt": fields.get("expiresAt"),
            "userId": user.get("id") or fields.get("userId"), "subject": user.get("subject") or fields.get("subject"),
            "name": user.get("name")}


def _open_browser(url: str) -> bool:
    """webbrowser.open with stdout pointed at stderr: a browser launcher that chats ("Opening in
    existing browser session.") must not end up in the command's --json output."""
    import webbrowser

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        return webbrowser.open(url)
    except webbrowser.Error:
        return False
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _check_start(api: Api, start_path: str, redirect: str) -> None:
    """Ask the start endpoint before sending a person there: a refused redirect is an operator's fix."""
    r = api.raw("GET", start_path, params={"redirect": redirect})
    if r.is_redirect:
        return
    try:
        decode(r)
    except ApiError as exc:
        if exc.status == 400:
            exc.hint = ("the server must allow http://127.0.0.1 in SVC_IDP_REDIRECTS for `svc login`; "
                        "ask its operator, or use SVC_TOKEN with a personal access token")
        raise
    raise CliError(f"The sign-in start at {api.base_url}{start_path} answered HTTP {r.status_code}, not a redirect",
                   "bad_response")


def logout(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Forget the session stored for this API address."""
    url = state(ctx).api_url
    try:
        removed = credentials.remove(url)
    except OSError as exc:
        raise CliError(f"Cannot update {credentials.path()}: {exc.strerror}", "credentials_unwritable") from None

    def render(c: Console) -> None:
        from rich.text import Text

        c.print(Text(f"Signed out of {url}." if removed else f"Not signed in to {url}; nothing to remove."),
                soft_wrap=True)
        if env_token():
            output.note("note: SVC_TOKEN is still set in this environment.")

    output.emit(as_json, {"apiUrl": url, "removed": removed}, render)


def whoami(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Show the signed-in user and their orgs."""
    with Api.for_context(ctx) as api:
        me = api.get("/v1/me")

    def render(c: Console) -> None:
        from rich.text import Text

        user = me.get("user") or {}
        source = " (from SVC_TOKEN)" if env_token() else ""
        c.print(Text.assemble("Signed in to ", (api.base_url, "bold"), " as ", (str(user.get("subject")), "bold"),
                              f" ({user.get('provider')}){source}"), soft_wrap=True)
        c.print(Text(f"user id: {user.get('id')}"), soft_wrap=True)
        if user.get("email"):
            c.print(Text(f"email:   {user['email']}"), soft_wrap=True)
        if user.get("name"):
            c.print(Text(f"name:    {user['name']}"), soft_wrap=True)
        c.print(output.table(["ORG", "NAME", "ROLE", "PLAN", "PERSONAL"],
                             ([o.get("slug"), o.get("name"), o.get("role"), o.get("plan"), o.get("personal")]
                              for o in me.get("orgs") or []), empty="No orgs.", shrink={"NAME": 8}))

    output.emit(as_json, me, render)
