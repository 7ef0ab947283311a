"""Entry point of the `svc` console script: the HTTP client commands, `svc serve` and `svc admin`.

The client commands speak HTTP only. `svc serve` and `svc admin` import the server when they run,
not before, so the client never loads the server's modules. Start-up is kept short (docs/cli.md, "Start-up time"):
the command modules import only typer and the standard library at load time; http.client, rich and
platformdirs are imported by the code that uses them, and help is click's plain text (Rich's help
panels would cost more than the rest of `svc --help` together).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Annotated

import typer

from svc.cli import commands, output
from svc.cli.client import DEFAULT_API_URL, FROM_DEFAULT, FROM_ENV, FROM_OPTION, CliError, CliState, normalize_url
from svc.cli.plain import command_of

app = typer.Typer(name="svc", help="svc: host small web projects on your own control plane.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode=None)

# The client's verbs: name -> (module under svc.cli.commands, attribute, short help).
VERBS: dict[str, tuple[str, str, str]] = {
    "login": ("auth", "login", "Sign in (browser, or --dev) and store the session."),
    "logout": ("auth", "logout", "Forget the session stored for this API address."),
    "whoami": ("auth", "whoami", "Show the signed-in user and their orgs."),
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

# The rest of the command line, as typed, for the command that loads its own group: stopping at the
# first word keeps a `--` for it (svc admin credit ORG -- -$1.25), which click would otherwise eat.
_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False,
                "help_option_names": []}


@app.command("serve", context_settings=_PASSTHROUGH, add_help_option=False,
             help="Run svc: the control API and the background cycles (jobs, mail) in one process.",
             short_help="Run the svc server (API, edge, background cycles).")
def _serve(ctx: typer.Context) -> None:
    from svc.cli.serve import serve  # the server, loaded only for this command

    server = typer.Typer(add_completion=False, rich_markup_mode=None)
    server.command()(serve)
    command = command_of(server)
    command.main(args=list(ctx.args), prog_name="svc serve")


@app.command("admin", context_settings=_PASSTHROUGH, add_help_option=False,
             help="Operator commands, run on the server against its state store (svc admin plan ORG pro|free).",
             short_help="Operator commands on the server (plans).")
def _admin(ctx: typer.Context) -> None:
    from svc.cli.admin import app as admin  # the server's store, loaded only for this command

    _run_group(admin, ctx, "svc admin")


@app.command("certs", context_settings=_PASSTHROUGH, add_help_option=False,
             help="The TLS certificates svc holds, on the server against its store (svc certs list).",
             short_help="Operators: the TLS certificates svc holds.")
def _certs(ctx: typer.Context) -> None:
    from svc.cli.admin import certs_app  # the server's store, loaded only for this command

    _run_group(certs_app, ctx, "svc certs")


def _run_group(group: typer.Typer, ctx: typer.Context, prog_name: str) -> None:
    """A group of server-side commands, loaded when it runs, given the rest of the command line."""
    command = command_of(group)
    command.main(args=list(ctx.args), prog_name=prog_name)


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


def _wanted(args: list[str]) -> list[str]:
    """The client commands to load for these arguments: the one named (none for `svc serve`), else all
    of them (the top-level help, a mistyped name that click should answer with the list)."""
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
    if args[i] in ("serve", "admin", "certs"):
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
    command = command_of(build(_wanted(sys.argv[1:])))
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
