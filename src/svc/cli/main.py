"""Entry point of the `svc` console script: the HTTP client commands, and `svc serve`.

The client commands speak HTTP only. `svc serve` imports the server when it runs, not before, so the
client never loads the server's modules (and starts in a fraction of the time).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from svc.cli import output
from svc.cli.client import DEFAULT_API_URL, CliError, CliState, normalize_url
from svc.cli.commands import access, auth, deploy, invites, keys, members, orgs, projects, tokens
from svc.cli.commands import secrets as secrets_cmd

app = typer.Typer(name="svc", help="svc: host small web projects on your own control plane.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_show_locals=False)

_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


@app.command("serve", context_settings=_PASSTHROUGH, add_help_option=False,
             help="Run svc: the control API and the background cycles (jobs, mail) in one process.")
def _serve(ctx: typer.Context) -> None:
    from svc.cli.serve import serve  # the server, loaded only for this command

    server = typer.Typer(add_completion=False)
    server.command()(serve)
    server(args=list(ctx.args), prog_name="svc serve")


@app.callback()
def _root(
    ctx: typer.Context,
    api_url: Annotated[str, typer.Option("--api-url", envvar="SVC_API_URL", metavar="URL",
                                         help="The svc API to talk to.")] = DEFAULT_API_URL,
) -> None:
    """svc: host small web projects on your own control plane."""
    ctx.obj = CliState(api_url=normalize_url(api_url))


app.command("login")(auth.login)
app.command("logout")(auth.logout)
app.command("whoami")(auth.whoami)
app.add_typer(orgs.app, name="orgs")
app.add_typer(members.app, name="members")
app.add_typer(invites.app, name="invites")
app.add_typer(tokens.app, name="tokens")
app.add_typer(keys.app, name="keys")
app.add_typer(projects.app, name="projects")
app.command("deploy")(deploy.deploy)
app.command("deployments")(deploy.deployments)
app.command("rollback")(deploy.rollback)
app.add_typer(secrets_cmd.app, name="secrets")
app.add_typer(access.app, name="access")


def main() -> None:
    try:
        app()
    except CliError as exc:
        _report(exc)
        sys.exit(exc.exit_code)


def _report(exc: CliError) -> None:
    # Plain writes: an error line is never wrapped, and the message is never read as markup.
    sys.stdout.flush()
    print(f"error: {exc.message} ({exc.code})", file=sys.stderr)
    if exc.hint:
        output.note(f"hint: {exc.hint}")
