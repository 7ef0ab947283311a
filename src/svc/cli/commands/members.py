"""`svc members list|add|set-role|remove|leave`."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Members of an org and their roles."  # its line in `svc --help`
app = typer.Typer(help="Members of an org and their roles.", no_args_is_help=True)


class Role(StrEnum):
    viewer = "viewer"
    member = "member"
    admin = "admin"


OrgArg = Annotated[str, typer.Argument(metavar="ORG", help="The org's slug.")]
WhoArg = Annotated[str, typer.Argument(metavar="USER", help="The member's user id, subject or email.")]


def member_rows(members: list[dict[str, Any]]) -> Any:
    def row(m: dict[str, Any]) -> list[Any]:
        u = m.get("user") or {}
        return [u.get("subject"), u.get("provider"), u.get("name"), u.get("email"), m.get("role"),
                output.when(m.get("joinedAt")), u.get("id")]

    return output.table(["SUBJECT", "PROVIDER", "NAME", "EMAIL", "ROLE", "JOINED", "USER ID"],
                        (row(m) for m in members), empty="No members.", shrink={"NAME": 8, "EMAIL": 12},
                        optional=("JOINED", "PROVIDER"))


def resolve_member(api: Api, org: str, who: str) -> dict[str, Any]:
    """The member USER names: a user id, else a subject, else an email (each must be unambiguous)."""
    members: list[dict[str, Any]] = api.get(f"/v1/orgs/{seg(org)}/members").get("members") or []
    for key in ("id", "subject", "email"):
        hits = [m for m in members if (m.get("user") or {}).get(key) == who]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise CliError(f"{who!r} matches {len(hits)} members of {org}; give the user id instead", "ambiguous",
                           details={"userIds": [(m.get("user") or {}).get("id") for m in hits]})
    raise CliError(f"No member {who!r} in org {org}", "not_found")


@app.command("list")
def list_members(ctx: typer.Context, org: OrgArg, as_json: JsonFlag = False) -> None:
    """List an org's members (members and admins may look)."""
    with Api.for_context(ctx) as api:
        data = api.get(f"/v1/orgs/{seg(org)}/members")
    output.emit(as_json, data, lambda c: c.print(member_rows(data.get("members") or [])))


@app.command("add")
def add(
    ctx: typer.Context,
    org: OrgArg,
    subject: Annotated[str, typer.Argument(help="The user's subject at the identity provider (their login).")],
    role: Annotated[Role, typer.Option(metavar="ROLE", help="The role to give: viewer, member or admin.")]
    = Role.member,
    provider: Annotated[str | None, typer.Option(
        help="The user's identity provider; default: the server's (from /v1/config), else 'dev'.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Add a user who has signed in once (admins). To reach anyone else, use `svc invites create`."""
    with Api.for_context(ctx) as api:
        if provider is None:
            provider = api.get("/v1/config", auth=False).get("identityProvider") or "dev"
        m = api.post(f"/v1/orgs/{seg(org)}/members", {"provider": provider, "subject": subject, "role": role.value})
    output.emit_line(as_json, m, "Added ", (str((m.get("user") or {}).get("subject")), "bold"),
                     f" to {org} as {m.get('role')}.")


@app.command("set-role")
def set_role(
    ctx: typer.Context,
    org: OrgArg,
    who: WhoArg,
    role: Annotated[Role, typer.Argument(help="viewer, member or admin.")],
    as_json: JsonFlag = False,
) -> None:
    """Change a member's role (admins). The last admin cannot be demoted."""
    with Api.for_context(ctx) as api:
        user_id = str((resolve_member(api, org, who).get("user") or {}).get("id"))
        m = api.put(f"/v1/orgs/{seg(org)}/members/{seg(user_id)}", {"role": role.value})
    output.emit_line(as_json, m, (str((m.get("user") or {}).get("subject")), "bold"),
                     f" is now {m.get('role')} in {org}.")


@app.command("remove")
def remove(ctx: typer.Context, org: OrgArg, who: WhoArg, as_json: JsonFlag = False) -> None:
    """Remove a member from an org (admins). The last admin cannot be removed."""
    with Api.for_context(ctx) as api:
        user = resolve_member(api, org, who).get("user") or {}
        api.delete(f"/v1/orgs/{seg(org)}/members/{seg(str(user.get('id')))}")
    output.emit_line(as_json, {"removed": True, "org": org, "userId": user.get("id")},
                     "Removed ", (str(user.get("subject")), "bold"), f" from {org}.")


@app.command("leave")
def leave(ctx: typer.Context, org: OrgArg, as_json: JsonFlag = False) -> None:
    """Leave an org yourself. The last admin cannot leave."""
    with Api.for_context(ctx) as api:
        user_id = str((api.get("/v1/me").get("user") or {}).get("id"))
        api.delete(f"/v1/orgs/{seg(org)}/members/{seg(user_id)}")

    def render(c: Console) -> None:
        from rich.text import Text

        c.print(Text.assemble("You left ", (org, "bold"), "."), soft_wrap=True)

    output.emit(as_json, {"removed": True, "org": org, "userId": user_id}, render)
