"""`svc access show|set|bypass new|bypass revoke`: who may open a project's deployments."""

from __future__ import annotations

import getpass
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.commands.secrets import read_stdin
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

HELP = "Who may open a project's deployments."  # its line in `svc --help`
app = typer.Typer(help="Who may open a project's deployments: public, org members, or a shared password.",
                  no_args_is_help=True)
bypass_app = typer.Typer(help="The bypass secret that CI sends as the Svc-Access-Bypass header.",
                         no_args_is_help=True)
app.add_typer(bypass_app, name="bypass")

MAX_PASSWORD_BYTES = 1024

_MEANING = {
    "public": "anyone with the address",
    "org": "signed-in members of the org (any role)",
    "password": "anyone with the shared password",
}


class Mode(StrEnum):
    public = "public"
    org = "org"
    password = "password"


def _access_path(org: str, project: str) -> str:
    return f"{project_path(org, project)}/access"


def _describe(project: str, policy: dict[str, Any]) -> Text:
    from rich.text import Text

    mode = str(policy.get("mode"))
    return Text.assemble("Access to ", (project, "bold"), ": ", (mode, "bold"),
                         f" ({_MEANING[mode]})" if mode in _MEANING else "", ".")


@app.command("show")
def show(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Show a project's access mode (the password is never shown)."""
    with Api.for_context(ctx) as api:
        slug, name = target(api, org, project)
        policy = api.get(_access_path(slug, name))

    def render(c: Console) -> None:
        from rich.text import Text

        c.print(_describe(name, policy), soft_wrap=True)
        facts = []
        if "hasPassword" in policy:
            facts.append("a password is stored" if policy.get("hasPassword") else "no password is stored")
        if "hasBypass" in policy:
            facts.append("a bypass secret exists" if policy.get("hasBypass") else "no bypass secret")
        if facts:
            c.print(Text("; ".join(facts).capitalize() + "."), soft_wrap=True)

    output.emit(as_json, policy, render)


def _new_password() -> str | None:
    """Ask on the terminal, without echo; an empty answer keeps the stored password."""
    first = getpass.getpass("New password (empty: keep the current one): ", stream=sys.stderr)
    if not first:
        return None
    if getpass.getpass("New password again: ", stream=sys.stderr) != first:
        raise CliError("The two entries differ; nothing was changed", "mismatch")
    return first


@app.command("set")
def set_mode(
    ctx: typer.Context,
    mode: Annotated[Mode, typer.Argument(metavar="MODE", help="public, org or password.")],
    password_stdin: Annotated[bool, typer.Option(
        "--password-stdin", help="With password: read the new password from standard input.")] = False,
    project: ProjectOption = None,
    org: OrgOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Set the access mode (admins).

    For password mode the password comes from --password-stdin or a hidden prompt; else the stored one stays."""
    if password_stdin and mode is not Mode.password:
        raise typer.BadParameter("--password-stdin goes with the password mode", param_hint="--password-stdin")
    body: dict[str, Any] = {"mode": mode.value}
    with Api.for_context(ctx) as api:
        slug, name = target(api, org, project)
        if password_stdin:
            body["password"] = read_stdin("password", MAX_PASSWORD_BYTES)
        elif mode is Mode.password and sys.stdin.isatty():
            password = _new_password()
            if password is not None:
                body["password"] = password
        # Whether a password was stored before: the first one is set, a later one changes it.
        had_password = "password" in body and bool(api.get(_access_path(slug, name)).get("hasPassword"))
        policy = api.put(_access_path(slug, name), body)

    def render(c: Console) -> None:
        from rich.text import Text

        c.print(_describe(name, policy), soft_wrap=True)
        if had_password:
            c.print(Text("The password was changed; people who entered the old one must enter the new one."),
                    soft_wrap=True)
        elif "password" in body:
            c.print(Text("The password was set; people must enter it to open the project's deployments."),
                    soft_wrap=True)

    output.emit(as_json, policy, render)


@bypass_app.command("new")
def bypass_new(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
               as_json: JsonFlag = False) -> None:
    """Make a new bypass secret and print it once; the previous one stops working at once (admins)."""
    with Api.for_context(ctx) as api:
        slug, name = target(api, org, project)
        created = api.post(f"{_access_path(slug, name)}/bypass")

    def render(c: Console) -> None:
        from rich.text import Text

        c.print(Text.assemble("New bypass secret for ", (name, "bold"),
                              "; any previous one stopped working. Copy it now; it is not shown again:"),
                soft_wrap=True)
        c.print(Text(str(created.get("secret")), style="bold"), soft_wrap=True)
        c.print(Text("Send it as the request header Svc-Access-Bypass: <secret>."), soft_wrap=True)

    output.emit(as_json, created, render)


@bypass_app.command("revoke")
def bypass_revoke(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
                  as_json: JsonFlag = False) -> None:
    """Revoke the bypass secret (admins); the access mode stays as it is."""
    with Api.for_context(ctx) as api:
        slug, name = target(api, org, project)
        api.delete(f"{_access_path(slug, name)}/bypass")
    output.emit_line(as_json, {"revoked": True, "org": slug, "project": name},
                     "Revoked the bypass secret of ", (name, "bold"), ".")
