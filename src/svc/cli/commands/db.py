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


# --- generations, restore, export, delete ---

PHASES = {"restore": ["draining", "sealing", "committing", "reactivation", "done"],
          "delete": ["draining", "sealing", "committing", "done"],
          "backup": ["dumping", "verifying", "done"]}
PollOption = Annotated[float, typer.Option("--poll-seconds", min=0.05, max=60, hidden=True,
                                           help="How often to ask how the operation is doing.")]
NoWaitOption = Annotated[bool, typer.Option("--no-wait", help="Return once the operation has started.")]


def _size(n: Any) -> str:
    value = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


@app.command("generations")
def list_generations(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
                     as_json: JsonFlag = False) -> None:
    """The database's generations (hourly backups, and those of `svc db backup`), newest first:
    restore takes EPOCH SEQ from here."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(f"{_base(slug, proj)}/generations")

    def verified(g: dict[str, Any]) -> str:
        if g.get("verified") is None:
            return "checking"
        if not g.get("verified"):
            return "FAILED"
        return f"yes ({g.get('restoreSeconds') or 0:.1f} s restore)"

    def render(c: Console) -> None:
        c.print(output.table(["EPOCH", "SEQ", "KIND", "SIZE", "TAKEN", "VERIFIED"],
                             ([g.get("epoch"), g.get("seq"), g.get("kind"), _size(g.get("bytes")),
                               output.when(g.get("createdAt")), verified(g)]
                              for g in data.get("generations") or []),
                             empty=f"No generations of {proj}'s database yet."))
        c.print(f"Last change check: {output.when(data.get('lastCheckedAt')) or 'never'}")

    output.emit(as_json, data, render)


def follow(api: Api, base: str, op_id: str, kind: str, poll_seconds: float, *, quiet: bool) -> dict[str, Any]:
    """Ask how the operation is doing every `poll_seconds` (the spec's 2 s) until it has ended,
    showing its phase; the last answer."""
    import time

    phases = PHASES.get(kind, [])
    with output.err().status(f"{kind}: starting...") as status:
        while True:
            op: dict[str, Any] = api.get(f"{base}/operations/{seg(op_id)}")
            phase = str(op.get("phase"))
            step = f" ({phases.index(phase) + 1} of {len(phases)})" if phase in phases else ""
            if not quiet:
                status.update(f"{kind}: {phase}{step}...")
            if op.get("terminalCode") is not None:
                return op
            time.sleep(poll_seconds)


def _ended(as_json: bool, op: dict[str, Any], done: str) -> None:
    code = op.get("terminalCode")
    if as_json:
        output.print_json(op)
    elif code == "ok":
        output.say(done)
    if code != "ok":
        why = f": {op['error']}" if op.get("error") else "; `svc notifications list` says why"
        raise CliError(f"The {op.get('kind')} ended {code}{why}", f"operation_{code}")


@app.command("backup")
def backup(ctx: typer.Context, no_wait: NoWaitOption = False, poll_seconds: PollOption = 2.0,
           project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Back up now (members): a generation taken now and proven by a scratch restore, as the
    hourly ones. One at a time per project."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        started = api.post(f"{_base(slug, proj)}/generations")
        op_id = str(started.get("operationId"))
        if no_wait:
            output.emit_line(as_json, started, f"Backup of {proj}'s database started: operation ", (op_id, "bold"))
            return
        op = follow(api, _base(slug, proj), op_id, "backup", poll_seconds, quiet=as_json)
        ref = op.get("generation") or {}
        listed = api.get(f"{_base(slug, proj)}/generations") if op.get("terminalCode") == "ok" else {}
    taken: dict[str, Any] = next((g for g in listed.get("generations") or []
                  if (g.get("epoch"), g.get("seq")) == (ref.get("epoch"), ref.get("seq"))), {})
    _ended(as_json, op, f"Generation {ref.get('epoch')}.{ref.get('seq')} of {proj}'s database taken "
                        f"({_size(taken.get('bytes'))}) and verified: restored in "
                        f"{taken.get('restoreSeconds') or 0:.1f} s.")


@app.command("restore")
def restore(ctx: typer.Context, epoch: Annotated[int, typer.Argument(min=1)],
            seq: Annotated[int, typer.Argument(min=1)],
            yes: Annotated[bool, typer.Option("--yes", help="Do not ask: writes made after the generation are lost.")]
            = False, no_wait: NoWaitOption = False, poll_seconds: PollOption = 2.0, project: ProjectOption = None,
            org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Put the database back to generation EPOCH SEQ (admins). Writes made after it are lost; what
    it replaces is kept as a pre-restore generation."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        if not yes:
            if not sys.stdin.isatty():
                raise CliError("Restoring loses the writes made after the generation: add --yes to confirm",
                               "confirm_needed")
            if output.ask(f"Restore {proj}'s database to {epoch}.{seq}? Writes after it are lost. [y/N] ").lower() \
                    not in ("y", "yes"):
                raise CliError("Nothing was changed", "cancelled")
        started = api.post(f"{_base(slug, proj)}/restore", {"epoch": epoch, "seq": seq})
        op_id = str(started.get("operationId"))
        if no_wait:
            output.emit_line(as_json, started, f"Restore of {proj}'s database started: operation ", (op_id, "bold"))
            return
        op = follow(api, _base(slug, proj), op_id, "restore", poll_seconds, quiet=as_json)
    _ended(as_json, op, f"Restored {proj}'s database to generation {epoch}.{seq}.")


@app.command("delete")
def delete(ctx: typer.Context, confirm: Annotated[str | None, typer.Option(
               "--confirm", help="The project's name, to confirm (asked for when missing).")] = None,
           no_wait: NoWaitOption = False, poll_seconds: PollOption = 2.0, project: ProjectOption = None,
           org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Delete the project's database (admins). Its final generation is kept and listed."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        if confirm is None:
            if not sys.stdin.isatty():
                raise CliError(f"Add --confirm {proj} to delete the database", "confirm_needed")
            confirm = output.ask(f"Type the project's name ({proj}) to delete its database: ")
        started = api.post(f"{_base(slug, proj)}/delete", {"confirm": confirm})
        op_id = str(started.get("operationId"))
        if no_wait:
            output.emit_line(as_json, started, f"Deletion of {proj}'s database started: operation ", (op_id, "bold"))
            return
        op = follow(api, _base(slug, proj), op_id, "delete", poll_seconds, quiet=as_json)
    _ended(as_json, op, f"Deleted {proj}'s database; its final generation is kept (svc db generations).")


@app.command("export")
def export(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """A diagnostic image of the database now (not a backup: restore cannot select it)."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        with output.err().status(f"Exporting {proj}'s database..."):
            data = api.post(f"{_base(slug, proj)}/export")
    output.emit_line(as_json, data, "Exported to ", (str(data.get("key")), "bold"), ".")


@app.command("operation")
def operation(ctx: typer.Context, op_id: Annotated[str, typer.Argument(metavar="OPERATION")],
              abort: Annotated[bool, typer.Option("--abort", help="Abort it (a delete before committing).")] = False,
              project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Where a restore or delete is; `--abort` stops a delete before its point of no return."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        base = f"{_base(slug, proj)}/operations/{seg(op_id)}"
        op = api.post(base + "/abort") if abort else api.get(base)
    output.emit_line(as_json, op, f"{op.get('kind')} {op_id}: ", (str(op.get("phase")), "bold"),
                     f" ({op.get('terminalCode') or 'running'})")


# --- the port-forward path ---


def _ws_url(base_url: str, path: str) -> str:
    scheme, _, rest = base_url.partition("://")
    return ("wss" if scheme == "https" else "ws") + "://" + rest.rstrip("/") + path


async def _pump_connection(reader: Any, writer: Any, url: str, token: str) -> None:
    """One local client connection through one WebSocket to svc, bytes both ways."""
    import asyncio

    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    try:
        async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None,
                           open_timeout=15) as ws:
            async def up() -> None:
                while chunk := await reader.read(64 * 1024):
                    await ws.send(chunk)

            async def down() -> None:
                async for message in ws:
                    if isinstance(message, str):  # svc's refusal (the Error envelope)
                        output.note(f"svc db proxy: {message}")
                        return
                    writer.write(message)
                    await writer.drain()

            tasks = [asyncio.create_task(up()), asyncio.create_task(down())]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    except (OSError, WebSocketException) as exc:
        output.note(f"svc db proxy: the tunnel to svc failed: {exc}")
    finally:
        writer.close()


@app.command("proxy")
def proxy(ctx: typer.Context, port: Annotated[int, typer.Option(
              "--port", min=0, max=65535, help="The local port to listen on (0: a free one).")] = 0,
          project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """A local port that reaches the database through svc with your login session: no password.

    Point psql or any client at it (any user name and password do); Ctrl+C stops it."""
    import asyncio

    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        endpoint = api.get(f"{_base(slug, proj)}/endpoint")
        api.get(f"{_base(slug, proj)}/tokens")  # a member, and the database exists: said now, not per connection
        if api.token is None:
            raise api.not_signed_in()
        url, token = _ws_url(api.base_url, f"{_base(slug, proj)}/proxy"), api.token

    async def run() -> None:
        server = await asyncio.start_server(lambda r, w: _pump_connection(r, w, url, token), "127.0.0.1", port)
        bound = server.sockets[0].getsockname()[1]
        database = endpoint.get("database")
        info = {"host": "127.0.0.1", "port": bound, "database": database,
                "url": f"postgresql://127.0.0.1:{bound}/{database}?sslmode=disable"}
        if as_json:  # one line: the command goes on running, and a script reads this line first
            import json

            sys.stdout.write(json.dumps(info) + "\n")
        else:
            output.say(f"Listening on 127.0.0.1:{bound} for {proj}'s database. Connect with:\n"
                       f"  psql '{info['url']}'\n(no password needed; Ctrl+C stops)")
        sys.stdout.flush()
        async with server:
            await server.serve_forever()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
