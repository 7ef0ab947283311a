"""The client's commands of the `svc` console script (svc/entry.py adds the server's: serve, admin,
certs, from svc.operator, which this package never imports).

The client commands speak HTTP only; the server's commands import the server when they run, not
before, so the client never loads the server's modules. Start-up is kept short (docs/cli.md, "Start-up time"):
the command modules import only typer and the standard library at load time; http.client, rich and
platformdirs are imported by the code that uses them, and help is click's plain text (Rich's help
panels would cost more than the rest of `svc --help` together).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Collection
from typing import Annotated

import typer

from svc.cli import commands, output
from svc.cli.client import DEFAULT_API_URL, FROM_DEFAULT, FROM_ENV, FROM_OPTION, CliError, CliState, normalize_url
from svc.cli.plain import command_of

app = typer.Typer(name="svc", help="svc: host small web projects on your own control plane.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode=None)

# The client's verbs: name -> (module under svc.cli.commands, attribute, short help).
VERBS: dict[str, tuple[str, str, str]] = {
    "login": ("login", "login", "Sign in (browser, or --dev) and store the session."),
    "logout": ("login", "logout", "Forget the session stored for this API address."),
    "whoami": ("login", "whoami", "Show the signed-in user and their orgs."),
    "deploy": ("deploy", "deploy", "Pack a folder, upload it, and make it live at once."),
    "deployments": ("deploy", "deployments", "List a project's deployments, newest first."),
    "rollback": ("deploy", "rollback", "Make an earlier deployment live again."),
    "logs": ("logs", "logs", "Show a project's logs (its worker's output); --follow for new lines."),
    "git-credential": ("git_credential", "git_credential", "git's credential helper for git over HTTPS (install: "
                                                          "svc git-credential install)."),
}
# Every other module under svc.cli.commands is a group of commands named after it (`svc dns ...` is
# commands/dns.py), with its Typer `app` and a `HELP` line for the list: an area's CLI module is
# found by its name, so adding one touches nothing here. Only the module of the command being run
# is imported (all of them for the top-level help).
_VERB_MODULES = {module for module, _, _ in VERBS.values()}


def groups() -> list[str]:
    """The command groups: the modules under svc.cli.commands (their files listed, none imported)."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if m.name not in _VERB_MODULES)


_ROOT_OPTIONS_WITH_VALUE = ("--api-url",)

def version() -> str:
    """The installed package's version (importlib.metadata), else the source tree's."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("svc")
    except PackageNotFoundError:
        from svc import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"svc {version()}\n")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    api_url: Annotated[str, typer.Option("--api-url", envvar="SVC_API_URL", metavar="URL",
                                         help="The svc API to talk to.")] = DEFAULT_API_URL,
    show_version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                               help="Print svc's version and exit.")] = False,
) -> None:
    """svc: host small web projects on your own control plane."""
    source = ctx.get_parameter_source("api_url")
    origin = {"COMMANDLINE": FROM_OPTION, "ENVIRONMENT": FROM_ENV}.get(getattr(source, "name", ""), FROM_DEFAULT)
    ctx.obj = CliState(api_url=normalize_url(api_url), api_url_origin=origin)


def _wanted(args: list[str], server_commands: Collection[str] = ()) -> list[str]:
    """The client commands to load for these arguments: the one named (none for one of the server's
    commands, `svc serve`), else all of them (the top-level help, a mistyped name that click should
    answer with the list)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in _ROOT_OPTIONS_WITH_VALUE:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        break
    everything = [*VERBS, *groups()]
    if i >= len(args):
        return everything
    if args[i] in server_commands:
        return []
    return [args[i]] if args[i] in everything else everything


def build(names: list[str]) -> typer.Typer:
    """`app` with these client commands registered (each at most once)."""
    registered = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    for name in names:
        if name in registered:
            continue
        if name in VERBS:
            module_name, attribute, short_help = VERBS[name]
            verb = getattr(importlib.import_module(f"svc.cli.commands.{module_name}"), attribute)
            app.command(name, short_help=short_help)(verb)
        else:
            group = importlib.import_module(f"svc.cli.commands.{name}")
            app.add_typer(group.app, name=name, short_help=group.HELP)
    return app


def main() -> None:
    """The client's commands alone (the console script is svc/entry.py's, with the server's too)."""
    run()


def run(server_commands: Collection[str] = ()) -> None:
    """`app` with the client command these arguments name (or all), run on sys.argv; the names of
    commands registered on `app` by the entry point are `server_commands`."""
    command = command_of(build(_wanted(sys.argv[1:], server_commands)))
    try:
        command.main(prog_name="svc")
    except CliError as exc:
        _report(exc)
        sys.exit(exc.exit_code)


def _report(exc: CliError) -> None:
    # Plain writes: an error line is never wrapped, and the message is never read as markup.
    sys.stdout.flush()
    print(f"error: {exc.message} ({exc.code})", file=sys.stderr)
    if exc.hint:
        output.note(f"hint: {exc.hint}")
