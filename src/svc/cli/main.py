"""Entry point of the `svc` console script."""

from __future__ import annotations

import typer

from svc.cli.serve import serve

app = typer.Typer(name="svc", help="svc: host small web projects on your own control plane.",
                  no_args_is_help=True, add_completion=False)
app.command("serve")(serve)


@app.callback()
def _root() -> None:
    """svc: host small web projects on your own control plane."""


def main() -> None:
    app()
