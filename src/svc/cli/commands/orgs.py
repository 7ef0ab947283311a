"""`svc orgs list|create|rename|delete|notifications`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Your orgs: list, create, rename, delete."  # its line in `svc --help`
app = typer.Typer(help="Your orgs: list, create, rename, delete.", no_args_is_help=True)

OrgArg = Annotated[str, typer.Argument(metavar="ORG", help="The org's slug.")]


def _org_rows(orgs: list[dict[str, Any]]) -> Any:
    return output.table(["ORG", "NAME", "ROLE", "PLAN", "PERSONAL", "PROJECT LIMIT"],
                        ([o.get("slug"), o.get("name"), o.get("role"), o.get("plan"), o.get("personal"),
                          o.get("projectLimit")] for o in orgs), empty="No orgs.",
                        shrink={"NAME": 8}, optional=("PROJECT LIMIT", "PERSONAL"))


@app.command("list")
def list_orgs(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the orgs you belong to, with your role in each."""
    with Api.for_context(ctx) as api:
        data = api.get("/v1/orgs")
    output.emit(as_json, data, lambda c: c.print(_org_rows(data.get("orgs") or [])))


@app.command("create")
def create(
    ctx: typer.Context,
    slug: Annotated[str, typer.Argument(help="Lowercase a-z, 0-9 and inner '-', 3-32 characters; cannot change.")],
    name: Annotated[str | None, typer.Option(help="Display name (defaults to the slug).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an org; you become its admin."""
    body: dict[str, Any] = {"slug": slug}
    if name is not None:
        body["name"] = name
    with Api.for_context(ctx) as api:
        org = api.post("/v1/orgs", body)
    output.emit_line(as_json, org, "Created org ", (str(org.get("slug")), "bold"), f" ({org.get('name')}).")


@app.command("rename")
def rename(
    ctx: typer.Context,
    org: OrgArg,
    name: Annotated[str, typer.Argument(help="The new display name (the slug never changes).")],
    as_json: JsonFlag = False,
) -> None:
    """Change an org's display name (admins)."""
    with Api.for_context(ctx) as api:
        data = api.patch(f"/v1/orgs/{seg(org)}", {"name": name})
    output.emit_line(as_json, data, "Renamed ", (str(data.get("slug")), "bold"), f" to {data.get('name')!r}.")


@app.command("delete")
def delete(
    ctx: typer.Context,
    org: OrgArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", "--confirm",
                                      help="Do not ask to type the slug (for scripts).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete an empty org (admins). Asks you to type the slug unless --yes."""
    confirm = org
    if not yes:
        typed = output.ask(f"This deletes the org {org!r}. Type its slug to confirm: ")
        if typed.strip() != org:
            raise CliError("The slug you typed does not match; nothing was deleted", "confirm_mismatch")
        confirm = typed
    with Api.for_context(ctx) as api:
        api.delete(f"/v1/orgs/{seg(org)}", {"confirm": confirm})
    output.emit_line(as_json, {"deleted": True, "org": org}, "Deleted org ", (org, "bold"), ".")


@app.command("notifications")
def notifications(
    ctx: typer.Context,
    org: OrgArg,
    limit: Annotated[int, typer.Option(min=1, max=200, metavar="N", help="How many, newest first.")] = 20,
    as_json: JsonFlag = False,
) -> None:
    """Show an org's recent notifications (limits, backups, restores)."""
    with Api.for_context(ctx) as api:
        data = api.get(f"/v1/orgs/{seg(org)}/notifications", params={"limit": limit})

    def render(c: Console) -> None:
        c.print(output.table(["WHEN", "KIND", "PROJECT", "MESSAGE", "EMAILED"],
                             ([output.when(n.get("createdAt")), n.get("kind"), n.get("project"), n.get("message"),
                               output.when(n.get("sentAt"))] for n in data.get("notifications") or []),
                             empty="No notifications.", shrink={"MESSAGE": 12, "PROJECT": 8},
                             optional=("EMAILED",)))

    output.emit(as_json, data, render)
