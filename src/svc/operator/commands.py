"""The server's commands as the `svc` command shows them: registered on the client's app by the
console script (svc/entry.py), each loading the server only when it runs."""

from __future__ import annotations

import gc
import importlib
from typing import Any

import typer

from svc.cli.plain import command_of

# The rest of the command line, as typed, for the command that loads its own group: stopping at the
# first word keeps a `--` for it (svc admin credit ORG -- -$1.25), which click would otherwise eat.
_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False,
                "help_option_names": []}

NAMES = frozenset({"serve", "admin", "certs"})


def _server_commands(module: str) -> Any:
    """The server's commands of `module`, with the collector off while they load: the import makes
    some 320,000 objects that live as long as the command, and collecting as they come cost 15% of
    `svc admin`'s run (bench/cli.py)."""
    gc.disable()
    try:
        return importlib.import_module(module)
    finally:
        gc.enable()


def register(app: typer.Typer) -> None:
    """`svc serve`, `svc admin` and `svc certs` on the client's app."""

    @app.command("serve", context_settings=_PASSTHROUGH, add_help_option=False,
                 help="Run svc: the control API and the background cycles (jobs, mail) in one process.",
                 short_help="Run the svc server (API, edge, background cycles).")
    def _serve(ctx: typer.Context) -> None:
        from svc.operator.serve import serve  # the server, loaded only for this command

        server = typer.Typer(add_completion=False, rich_markup_mode=None)
        server.command()(serve)
        command_of(server).main(args=list(ctx.args), prog_name="svc serve")

    @app.command("admin", context_settings=_PASSTHROUGH, add_help_option=False,
                 help="Operator commands, run on the server against its state store (svc admin plan ORG pro|free).",
                 short_help="Operator commands on the server (plans).")
    def _admin(ctx: typer.Context) -> None:
        admin = _server_commands("svc.operator.admin").app  # the server's store, loaded only for this command
        command_of(admin).main(args=list(ctx.args), prog_name="svc admin")

    @app.command("certs", context_settings=_PASSTHROUGH, add_help_option=False,
                 help="The TLS certificates svc holds, on the server against its store (svc certs list).",
                 short_help="Operators: the TLS certificates svc holds.")
    def _certs(ctx: typer.Context) -> None:
        certs_app = _server_commands("svc.operator.admin").certs_app  # loaded only for this command
        command_of(certs_app).main(args=list(ctx.args), prog_name="svc certs")
