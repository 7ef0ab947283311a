"""`svc secrets set|list|delete`: a project's secrets (values go in, never out)."""

from __future__ import annotations

import getpass
import re
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "A project's secrets (values are never shown)."  # its line in `svc --help`
app = typer.Typer(help="A project's secrets (reach the worker as env.<NAME>; values are never shown).",
                  no_args_is_help=True)

MAX_VALUE_BYTES = 65_536
_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="A-Z first, then A-Z, 0-9 and _ (up to 64).")]


def check_name(name: str) -> None:
    """The API's naming rules, checked before a value is asked for (the API checks them again)."""
    if not _NAME.fullmatch(name):
        raise CliError(f"{name!r} is not a secret name: an uppercase letter, then up to 63 of A-Z, 0-9 and _",
                       "bad_request")
    if name in ("DB", "ASSETS") or name.startswith("SVC_"):
        raise CliError(f"{name} is reserved (DB, ASSETS and SVC_* are)", "reserved_name")


def read_stdin(what: str, limit: int = MAX_VALUE_BYTES) -> str:
    """The whole of standard input as UTF-8 text, without one trailing newline; never echoed."""
    raw = sys.stdin.buffer.read(limit + 3)
    if len(raw) > limit + 2:  # more than the bound even after a trailing CRLF is dropped
        raise CliError(f"The {what} on standard input is over {limit:,} bytes", "value_too_large")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"The {what} on standard input is not UTF-8 text", "bad_value") from None
    text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    if len(text.encode("utf-8")) > limit:
        raise CliError(f"The {what} on standard input is over {limit:,} bytes", "value_too_large")
    if not text:
        raise CliError(f"No {what} on standard input", "no_value")
    return text


def prompt_twice(what: str) -> str:
    """Ask on the terminal without echo, twice; the two entries must match."""
    first = getpass.getpass(f"{what[:1].upper()}{what[1:]}: ", stream=sys.stderr)
    if not first:
        raise CliError(f"No {what} entered; nothing was changed", "no_value")
    if getpass.getpass(f"{what[:1].upper()}{what[1:]} again: ", stream=sys.stderr) != first:
        raise CliError("The two entries differ; nothing was changed", "mismatch")
    if len(first.encode("utf-8")) > MAX_VALUE_BYTES:
        raise CliError(f"The {what} is over {MAX_VALUE_BYTES:,} bytes", "value_too_large")
    return first


def read_value(what: str) -> str:
    """From standard input when it is piped or redirected, else a hidden prompt (twice)."""
    return prompt_twice(what) if sys.stdin.isatty() else read_stdin(what)


@app.command("set")
def set_secret(ctx: typer.Context, name: NameArg, project: ProjectOption = None, org: OrgOption = None,
               as_json: JsonFlag = False) -> None:
    """Set a secret: the value comes from standard input when piped, else from a hidden prompt.

    Every set makes a new version. One trailing newline of piped input is dropped."""
    check_name(name)
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        value = read_value(f"value for {name}")
        meta = api.put(f"{project_path(slug, proj)}/secrets/{seg(name)}", {"value": value})
    output.emit_line(as_json, meta, "Set secret ", (str(meta.get("name")), "bold"),
                     f" of {proj} (version {meta.get('version')}).")


@app.command("list")
def list_secrets(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
                 as_json: JsonFlag = False) -> None:
    """List a project's secrets: names and versions (members)."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(f"{project_path(slug, proj)}/secrets")

    def render(c: Console) -> None:
        c.print(output.table(["NAME", "VERSION", "UPDATED"],
                             ([s.get("name"), s.get("version"), output.when(s.get("updatedAt"))]
                              for s in data.get("secrets") or []), empty=f"No secrets in {proj}."))

    output.emit(as_json, data, render)


@app.command("delete")
def delete_secret(ctx: typer.Context, name: NameArg, project: ProjectOption = None, org: OrgOption = None,
                  as_json: JsonFlag = False) -> None:
    """Delete a secret."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        api.delete(f"{project_path(slug, proj)}/secrets/{seg(name)}")
    output.emit_line(as_json, {"deleted": True, "org": slug, "project": proj, "name": name},
                     "Deleted secret ", (name, "bold"), f" of {proj}.")
