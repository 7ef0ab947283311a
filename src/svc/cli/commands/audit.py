"""`svc audit list`: an org's audit trail (admins), newest first."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, seg
from svc.cli.commands.projects import OrgOption, local_manifest, resolve_org
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "An org's audit trail: who changed what (admins)."  # its line in `svc --help`
app = typer.Typer(help="An org's audit trail: who changed what, newest first (admins).", no_args_is_help=True)


def details(payload: Any) -> str:
    """The event's payload on one line: `key=value` pairs (nested values as compact JSON)."""
    if not isinstance(payload, dict) or not payload:
        return ""
    return " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, separators=(',', ':'))}"
                    for k, v in payload.items())


def event_rows(events: list[dict[str, Any]]) -> Any:
    return output.table(["AT", "ACTOR", "ACTION", "TARGET", "DETAILS"],
                        ([output.when(e.get("at")), e.get("actor") or "(operator)", e.get("action"), e.get("target"),
                          details(e.get("payload"))] for e in events),
                        empty="No audit events.", shrink=[{"DETAILS": 10}, {"TARGET": 12, "ACTOR": 10}],
                        optional=("DETAILS",))


@app.command("list")
def list_events(
    ctx: typer.Context,
    org: OrgOption = None,
    action: Annotated[str | None, typer.Option(
        metavar="ACTION", help="Only this event (member.add), or every event under a prefix ending in '.' "
                               "(member.).")] = None,
    actor: Annotated[str | None, typer.Option(
        metavar="ACTOR", help="Only events by this actor, as listed (provider:subject, e.g. dev:alice).")] = None,
    limit: Annotated[int | None, typer.Option(metavar="N", help="How many events (1-200; default 50).")] = None,
    cursor: Annotated[str | None, typer.Option(
        "--cursor", "--before", metavar="CURSOR",
        help="The next page: the cursor the previous page ended with.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List an org's audit events, newest first (admins of the org)."""
    params: dict[str, Any] = {k: v for k, v in (("action", action), ("actor", actor), ("limit", limit),
                                                 ("cursor", cursor)) if v is not None}
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org, local_manifest() if not org else None)
        data = api.get(f"/v1/orgs/{seg(slug)}/audit", params=params)

    def render(c: Console) -> None:
        c.print(event_rows(data.get("events") or []))
        cursor = data.get("nextCursor")
        if cursor:
            again = " ".join(f"--{k} {v}" for k, v in params.items() if k != "cursor")
            output.note(f"Older events: svc audit list --org {slug} {again + ' ' if again else ''}--cursor {cursor}")

    output.emit(as_json, data, render)
