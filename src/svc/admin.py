"""What an area's server commands are written against (`svc admin ...`, declared in the area's
manifest as `admin`): the operator's side of the store, given by svc.operator, which runs them on
the server beside `svc serve`. An area adds its commands to the `svc admin` group it is handed
and does its work through `Operator.run` (a unit of work on the server's store); it prints with
`said` and refuses with `refuse` (the Error envelope's code and message, `--json` or a line)."""

from __future__ import annotations

import getpass
import json
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, Protocol, TypeVar

import typer

from svc.uow import Tx, UnitOfWork

T = TypeVar("T")

class Operator(Protocol):
    """What svc.operator gives the areas' commands."""

    def run(self, work: Callable[[UnitOfWork], Awaitable[T]], policy: Tx = Tx.WRITE) -> T:
        """`work(uow)` in a unit of work on the server's store (its state store and adapters, as
        `svc serve` beside it has them), to the end; what it returns."""
        ...


def said(text: str) -> None:
    """A line for the operator, as it is (no markup read in names and messages)."""
    typer.echo(text)


def as_json(value: Any) -> None:
    typer.echo(json.dumps(value))


def refuse(as_json: bool, code: str, message: str) -> NoReturn:
    """The command's refusal: the Error envelope on stdout with --json, else a line on stderr; exit 1."""
    if as_json:
        typer.echo(json.dumps({"code": code, "message": message, "details": None}))
    else:
        typer.echo(f"error: {message} ({code})", err=True)
    raise typer.Exit(1)


def operator_name(by: str | None) -> str:
    """Who runs an operator's command, for the audit trail: as they say (--by), else the server
    account running it."""
    if by is not None and by.strip():
        return by.strip()[:80]
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (a container's numeric user)
        return "unknown"


def group(app: typer.Typer, name: str, help: str) -> typer.Typer:
    """A command group of `svc admin` (`svc admin billing ...`)."""
    made = typer.Typer(name=name, no_args_is_help=True, add_completion=False, rich_markup_mode=None, help=help)
    app.add_typer(made, name=name)
    return made
