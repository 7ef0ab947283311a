"""`svc db ...`: a project's PostgreSQL database: create it, connect with psql, token users."""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "A project's PostgreSQL database (env.db), psql and token users."
app = typer.Typer(help="A project's PostgreSQL database: its worker reaches it as env.db; people with psql.",
                  no_args_is_help=True)
tokens = typer.Typer(help="Token users: logins of their own that expire, acting as the project's role.",
                     no_args_is_help=True)
app.add_typer(tokens, name="tokens")

MAX_TOKEN_MINUTES = 10_080


def _base(slug: str, proj: str) -> str:
    return f"{project_path(slug, proj)}/database"


def connection_url(creds: dict[str, Any]) -> str:
    """A libpq connection URL (psql, any driver) from /connect's credentials."""
    user = quote(str(creds["user"]), safe="")
    password = quote(str(creds["password"]), safe="")
    return (f"postgresql://{user}:{password}@{creds['host']}:{creds['port']}/{quote(str(creds['database']), safe='')}"
            f"?sslmode={creds['sslmode']}")


def psql_env(creds: dict[str, Any]) -> dict[str, str]:
    """psql's environment for these credentials: the password never on its command line."""
    return {**os.environ, "PGHOST": str(creds["host"]), "PGPORT": str(creds["port"]),
            "PGDATABASE": str(creds["database"]), "PGUSER": str(creds["user"]),
            "PGPASSWORD": str(creds["password"]), "PGSSLMODE": str(creds["sslmode"])}


def _details(c: Console, creds: dict[str, Any]) -> None:
    c.print(output.table(["HOST", "PORT", "DATABASE", "USER", "SSLMODE"],
                         [[creds.get("host"), creds.get("port"), creds.get("database"), creds.get("user"),
                           creds.get("sslmode")]]))


@app.command("create")
def create(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
           as_json: JsonFlag = False) -> None:
    """Give the project its database (members). Safe to run again: the password never changes.

    The worker gets env.db on its next request, with no redeploy."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        with output.err().status(f"Creating the database of {proj}..."):
            creds = api.post(_base(slug, proj))

    def render(c: Console) -> None:
        c.print(f"Database of {proj} ready. Its worker reaches it as env.db; `svc db connect` opens psql "
                "(`--url` prints a connection URL with the password).", soft_wrap=True)
        _details(c, creds)

    output.emit(as_json, creds, render)


@app.command("info")
def info(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Whether the project has a database, and where it is (no password)."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        state = api.get(_base(slug, proj))
        endpoint = api.get(f"{_base(slug, proj)}/endpoint") if state.get("db") else None
    data = {"db": bool(state.get("db")), "endpoint": endpoint}

    def render(c: Console) -> None:
        if endpoint is None:
            c.print(f"{proj} has no database. `svc db create` makes it.")
            return
        c.print(output.table(["HOST", "PORT", "DATABASE", "SSLMODE"],
                             [[endpoint.get("host"), endpoint.get("port"), endpoint.get("database"),
                               endpoint.get("sslmode")]]))

    output.emit(as_json, data, render)


@app.command("connect")
def connect(ctx: typer.Context, url: Annotated[bool, typer.Option(
                "--url", help="Print a connection URL (with the password) instead of starting psql.")] = False,
            project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Open psql on the project's database as its role (members); `--url` prints a URL instead."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        creds = api.get(f"{_base(slug, proj)}/connect")
    if as_json:
        output.print_json({**creds, "url": connection_url(creds)})
        return
    if url:
        output.say(connection_url(creds))
        return
    psql = shutil.which("psql")
    if psql is None:
        raise CliError("psql is not installed here (Debian: apt-get install postgresql-client); "
                       "`svc db connect --url` prints a URL for another client", "no_psql")
    sys.stdout.flush()
    os.execvpe(psql, [psql], psql_env(creds))  # noqa: S606 (psql replaces svc, as `exec psql` would)


@tokens.command("create")
def create_token(ctx: typer.Context, minutes: Annotated[int, typer.Option(
                     "--minutes", min=1, max=MAX_TOKEN_MINUTES,
                     help="How long it may log in (1 to 10080 minutes).")] = 60,
                 project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """A token user with a password of its own, shown once (members)."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        made = api.post(f"{_base(slug, proj)}/tokens", {"expiresInMinutes": minutes})

    def render(c: Console) -> None:
        c.print(f"Token user {made.get('user')} of {proj}, until {output.when(made.get('expiresAt'))}.")
        c.print(f"Password (shown only now): {made.get('password')}", soft_wrap=True)

    output.emit(as_json, made, render)


@tokens.command("list")
def list_tokens(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
                as_json: JsonFlag = False) -> None:
    """The token users that can still log in (no passwords)."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(f"{_base(slug, proj)}/tokens")

    def render(c: Console) -> None:
        c.print(output.table(["USER", "EXPIRES", "CREATED"],
                             ([t.get("user"), output.when(t.get("expiresAt")), output.when(t.get("createdAt"))]
                              for t in data.get("tokens") or []), empty=f"No token users in {proj}."))

    output.emit(as_json, data, render)


@tokens.command("delete")
def delete_token(ctx: typer.Context, user: Annotated[str, typer.Argument(metavar="USER")],
                 project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Delete a token user: its next connection is refused, its open ones end."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        api.delete(f"{_base(slug, proj)}/tokens/{seg(user)}")
    output.emit_line(as_json, {"deleted": True, "org": slug, "project": proj, "user": user},
                     "Deleted token user ", (user, "bold"), f" of {proj}.")
