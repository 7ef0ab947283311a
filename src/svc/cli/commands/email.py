"""`svc email status|grant|revoke|log|show|raw|send|records`: a project's address (mail in and out,
its worker's env.email), the mail log, one message and its raw copy, a quick test send, and the
DNS records to publish when svc does not serve the mail domain's zone.

`svc email log --follow` keeps asking for messages logged since (once a second) until Ctrl-C,
as `svc logs --follow` does; `svc email raw ID > x.eml` writes the message's bytes as svc stored
them (with the headers it added to received mail)."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, decode, seg
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Email for a project (env.email): its address, the mail log, raw messages, a test send."
app = typer.Typer(help="Email for a project: mail in at its address (handed to its worker's email() handler) "
                       "and out through env.email, the mail log, raw messages, and a quick test send.",
                  no_args_is_help=True)

FOLLOW_EVERY_SECONDS = 1.0
FOLLOW_PAGE = 200  # the API's largest page: what --follow asks for each time
MAX_RECIPIENTS = 50

MailId = Annotated[str, typer.Argument(metavar="ID", help="The message's id (the ID column of `svc email log`).")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (scripts; --json needs it).")]


def _base(slug: str, proj: str) -> str:
    return f"{project_path(slug, proj)}/email"


def _render_status(proj: str, data: dict[str, Any]) -> Any:
    def render(c: Console) -> None:
        address = data.get("address")
        if data.get("granted"):
            c.print(f"{proj} receives mail at any address @{address} and sends as {data.get('sender')}.",
                    soft_wrap=True)
        else:
            c.print(f"{proj} has no email: `svc email grant` gives it the address @{address} "
                    "(its worker gets env.email on its next request).", soft_wrap=True)
        c.print(f"Plan's cap: {data.get('hourlyCap')} sent an hour. Last 24 hours: {data.get('sent24h')} sent, "
                f"{data.get('received24h')} received.")
    return render


@app.command("status")
def status(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """The project's address (the one a grant would fix, before one), its sender, the plan's cap and counts."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(_base(slug, proj))
    output.emit(as_json, data, _render_status(proj, data))


@app.command("grant")
def grant(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Give the project its address (members): mail in and out; the address is fixed now. Safe to run again."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.post(_base(slug, proj))
    output.emit(as_json, data, _render_status(proj, data))


@app.command("revoke")
def revoke(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, yes: YesOption = False,
           as_json: JsonFlag = False) -> None:
    """Stop mail in and out for the project (admins): mail to its address is refused; the log is kept."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        output.confirm(yes, as_json, f"Stop email for {proj}? Mail to its address is refused from now on.", "revoke",
                       "Nothing was revoked")
        api.delete(_base(slug, proj))
    output.emit_line(as_json, {"project": proj, "granted": False},
                     f"{proj} no longer receives or sends mail (its log is kept).")


def _row(e: dict[str, Any]) -> list[Any]:
    return [output.when(e.get("createdAt")), e.get("direction"), e.get("outcome"), e.get("from"), e.get("to"),
            e.get("subject") or "", e.get("id")]


COLUMNS = ["WHEN", "DIR", "OUTCOME", "FROM", "TO", "SUBJECT", "ID"]


def _line(e: dict[str, Any]) -> str:
    """One message on one line (--follow prints them as they come, oldest first)."""
    when, direction, outcome, sender, to, subject, mail_id = _row(e)
    arrow = "<-" if direction == "in" else "->"
    party = sender if direction == "in" else to
    return f"{when}  {direction:<3} {outcome:<15} {arrow} {party}  {subject!r}  {mail_id}"


def _stamp(e: dict[str, Any]) -> tuple[datetime, str]:
    """The log's order: its instant, then its id."""
    return datetime.fromisoformat(str(e["createdAt"]).replace("Z", "+00:00")), str(e["id"])


@app.command("log")
def log(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
        direction: Annotated[str | None, typer.Option(metavar="in|out", help="Only mail received (in) or sent "
                                                                              "(out).")] = None,
        limit: Annotated[int, typer.Option(min=1, max=200, metavar="N", help="Messages a page (1-200).")] = 50,
        cursor: Annotated[str | None, typer.Option(metavar="CURSOR", help="The next page (what the last one "
                                                                          "printed).")] = None,
        follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep showing new messages as they come "
                                                                    "(Ctrl-C ends).")] = False,
        as_json: JsonFlag = False) -> None:
    """The project's mail log, newest first (viewers); --follow shows messages as they are logged."""
    if direction not in (None, "in", "out"):
        raise CliError("--direction: in or out", "bad_request")
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        path = f"{_base(slug, proj)}/log"
        only: dict[str, Any] = {"direction": direction} if direction else {}
        data = api.get(path, params={"limit": limit} | only | ({"cursor": cursor} if cursor else {}))
        entries: list[dict[str, Any]] = data.get("entries") or []
        if not follow:
            def render(c: Console) -> None:
                c.print(output.table(COLUMNS, [_row(e) for e in entries], shrink={"SUBJECT": 8, "FROM": 12, "TO": 12},
                                     empty=f"No mail in {proj}'s log{' (' + direction + ')' if direction else ''}."))
                if data.get("nextCursor"):
                    c.print(f"More: svc email log --cursor {data['nextCursor']}", style="dim", soft_wrap=True)

            output.emit(as_json, data, render)
            return
        _follow(api, path, only, entries, as_json)


def _follow(api: Api, path: str, only: dict[str, Any], first: list[dict[str, Any]], as_json: bool) -> None:
    """Print `first` oldest first, then every message logged after the newest of them, once each.

    A message newer than the newest shown is printed when it appears; pages are followed until one
    reaches what was shown already (a burst larger than a page loses nothing)."""
    def show(e: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps(e), flush=True)  # one JSON object per line, as it comes
        else:
            output.say(_line(e))

    for e in reversed(first):
        show(e)
    newest = max((_stamp(e) for e in first), default=None)
    try:
        while True:
            time.sleep(FOLLOW_EVERY_SECONDS)
            fresh: list[dict[str, Any]] = []
            params: dict[str, Any] = {"limit": FOLLOW_PAGE} | only
            while True:
                page = api.get(path, params=params)
                entries = page.get("entries") or []
                new = [e for e in entries if newest is None or _stamp(e) > newest]
                fresh += new
                if len(new) < len(entries) or not page.get("nextCursor"):
                    break
                params = {"limit": FOLLOW_PAGE, "cursor": page["nextCursor"]} | only
            for e in reversed(fresh):
                show(e)
            if fresh:
                newest = max(_stamp(e) for e in fresh)
    except KeyboardInterrupt:
        return


@app.command("show")
def show(ctx: typer.Context, mail_id: MailId, project: ProjectOption = None, org: OrgOption = None,
         as_json: JsonFlag = False) -> None:
    """One message of the log: who sent it to whom, its outcome, SPF, size."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        e = api.get(f"{_base(slug, proj)}/log/{seg(mail_id)}")

    def render(c: Console) -> None:
        from rich.table import Table

        facts = Table.grid(padding=(0, 2))
        facts.add_column(style="bold", no_wrap=True)
        facts.add_column(overflow="fold")
        rows = [("Id", e.get("id")), ("When", output.when(e.get("createdAt"))),
                ("Direction", "received" if e.get("direction") == "in" else "sent"), ("From", e.get("from")),
                ("To", e.get("to")), ("Subject", e.get("subject")), ("Outcome", e.get("outcome")),
                ("SPF", e.get("spf")), ("Size", f"{e.get('size')} bytes"),
                ("Raw", f"svc email raw {e.get('id')} > {e.get('id')}.eml" if e.get("hasRaw") else "not kept")]
        for name, value in rows:
            if value is not None:
                facts.add_row(name, output.cell(value))
        c.print(facts)

    output.emit(as_json, e, render)


@app.command("raw")
def raw(ctx: typer.Context, mail_id: MailId, project: ProjectOption = None, org: OrgOption = None,
        out: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write it to FILE "
                                                 "instead of standard output.")] = None,
        as_json: JsonFlag = False) -> None:
    """The raw message (.eml), as svc stored it, to standard output or -o FILE."""
    if as_json and out is None:
        raise CliError("--json prints where the message went: add -o FILE", "bad_request")
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        if not api.token:
            raise api.not_signed_in()
        r = api.raw("GET", f"{_base(slug, proj)}/log/{seg(mail_id)}/raw", token=api.token)
    if not r.is_success:
        decode(r, api.base_url, api.origin)  # raises the API's error
    if out is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(r.content)
        sys.stdout.buffer.flush()
        return
    out.write_bytes(r.content)
    output.emit_line(as_json, {"id": mail_id, "file": str(out), "size": len(r.content)},
                     f"Wrote {len(r.content)} bytes to ", (str(out), "bold"), ".")


@app.command("send")
def send(ctx: typer.Context,
         to: Annotated[list[str], typer.Option("--to", metavar="ADDRESS", help="A recipient (again for more, up "
                                                                               "to 50).")],
         subject: Annotated[str, typer.Option(help="The subject.")],
         text: Annotated[str | None, typer.Option(help="The plain text body.")] = None,
         html: Annotated[str | None, typer.Option(help="An HTML body (with or instead of --text).")] = None,
         sender: Annotated[str | None, typer.Option("--from", metavar="LOCAL", help="The local part of the From "
                                                    "address at the project's address (default: noreply).")] = None,
         reply_to: Annotated[str | None, typer.Option("--reply-to", metavar="ADDRESS", help="Reply-To.")] = None,
         project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Send a message from the project's address (members): a quick test; it shows in the log."""
    if text is None and html is None:
        raise CliError("--text or --html: a message needs a body", "bad_request")
    if len(to) > MAX_RECIPIENTS:
        raise CliError(f"--to: at most {MAX_RECIPIENTS} recipients", "bad_request")
    body: dict[str, Any] = {"to": to, "subject": subject}
    body |= {k: v for k, v in (("text", text), ("html", html), ("from", sender), ("replyTo", reply_to)) if v}
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        e = api.post(f"{_base(slug, proj)}/send", body)
    output.emit_line(as_json, e, f"Message {e.get('id')} to {e.get('to')}: ", (str(e.get("outcome")), "bold"),
                     f" (`svc email show {e.get('id')}` follows it).")


@app.command("records")
def records(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
            as_json: JsonFlag = False) -> None:
    """The DNS records the mail domain needs (MX, SPF, DKIM, DMARC), and whether svc publishes them itself."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(f"{_base(slug, proj)}/records")

    def render(c: Console) -> None:
        if data.get("published"):
            c.print("svc serves this mail domain's zone: these records are published already.")
        else:
            c.print("Publish these records where the mail domain's DNS is served:")
        # One record a line, whole (a DKIM key cut to fit a table could not be copied).
        for r in data.get("records") or []:
            c.print(output.cell(f"{r.get('name')}  {r.get('type')}  {r.get('content')}"), soft_wrap=True)

    output.emit(as_json, data, render)
