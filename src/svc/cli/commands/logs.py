"""`svc logs`: a project's logs (what its worker printed and threw, the edge's requests), oldest
first; --follow keeps asking for the lines stored since (once a second) until Ctrl-C; --request ID
only one request's lines (the edge's and its worker's)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.output import JsonFlag
from svc.kit.ids import short_request_id

if TYPE_CHECKING:
    from rich.text import Text

FOLLOW_EVERY_SECONDS = 1.0
_STYLES = {"error": "red", "warn": "yellow", "debug": "dim"}


def line_text(line: dict[str, Any]) -> Text:
    """One log line for a person: time, level, the request's id (the part that tells requests apart:
    kit/ids.py short_request_id), the message, the stack."""
    from rich.text import Text  # rich only once something is printed (`svc --help` stays quick)

    text = Text()
    text.append(f"{output.when(line.get('at')) or ''} ", style="dim")
    level = str(line.get("level") or "log")
    text.append(f"{level:<5} ", style=_STYLES.get(level, ""))
    request_id = line.get("requestId")
    if request_id:
        text.append(f"[{short_request_id(str(request_id))}] ", style="dim")
    text.append(str(line.get("message") or ""))
    if line.get("stack"):
        text.append("\n" + str(line["stack"]), style="dim")
    return text


def logs(
    ctx: typer.Context,
    project: ProjectOption = None,
    org: OrgOption = None,
    since: Annotated[str | None, typer.Option(metavar="AGE", help="Only lines this recent: 30s, 10m, 2h, 7d.")] = None,
    limit: Annotated[int, typer.Option(metavar="N", help="How many of the latest lines (1-1000).")] = 100,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep showing new lines as they come (Ctrl-C ends).")]
    = False,
    request: Annotated[str | None, typer.Option(
        "--request", metavar="ID", help="Only one request's lines (the edge's and its worker's): its id as shown "
                                        "between brackets, or whole.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Show a project's logs: its worker's console output and uncaught exceptions, and the edge's requests
    (viewers)."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        path = f"{project_path(slug, proj)}/logs"
        only: dict[str, Any] = {"request": request} if request else {}
        params: dict[str, Any] = {"limit": limit} | ({"since": since} if since else {}) | only
        data = api.get(path, params=params)
        if not follow:
            def render(c: Any) -> None:
                lines = data.get("lines") or []
                for line in lines:
                    c.print(line_text(line))
                if not lines:
                    output.note(f"No log lines for {proj}{' of request ' + request if request else ''}"
                                f"{' in the last ' + since if since else ''}.")

            output.emit(as_json, data, render)
            return
        try:
            while True:
                for line in data.get("lines") or []:
                    if as_json:
                        print(json.dumps(line), flush=True)  # one JSON object per line, as it comes
                    else:
                        output.out().print(line_text(line))
                time.sleep(FOLLOW_EVERY_SECONDS)
                data = api.get(path, params={"cursor": data.get("nextCursor"), "limit": 1000} | only)
        except KeyboardInterrupt:
            return
