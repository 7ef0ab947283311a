"""`svc invites list|create|revoke|show|accept`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import unquote, urlsplit

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg, state
from svc.cli.commands.members import Role
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Invitations to join an org, by email."  # its line in `svc --help`
app = typer.Typer(help="Invitations to join an org, by email.", no_args_is_help=True)

OrgArg = Annotated[str, typer.Argument(metavar="ORG", help="The org's slug.")]
TokenArg = Annotated[str, typer.Argument(metavar="INVITE", help="The invite token, or the whole invite link.")]


def invite_token(text: str) -> str:
    """`https://svc.example/invites/<token>?x#y` or `<token>` -> `<token>`."""
    raw = text.strip()
    if "/" not in raw:
        return raw
    parts = [p for p in urlsplit(raw).path.split("/") if p]
    if "invites" in parts:
        i = len(parts) - 1 - parts[::-1].index("invites")
        if i + 1 < len(parts):
            return unquote(parts[i + 1])
    raise CliError(f"{text!r} is not an invite link (…/invites/<token>) or token", "bad_invite")


@app.command("list")
def list_invites(ctx: typer.Context, org: OrgArg, as_json: JsonFlag = False) -> None:
    """List an org's pending and expired invites (admins)."""
    with Api.for_context(ctx) as api:
        data = api.get(f"/v1/orgs/{seg(org)}/invites")

    def render(c: Console) -> None:
        c.print(output.table(["ID", "EMAIL", "ROLE", "STATE", "EXPIRES", "EMAILED"],
                             ([i.get("id"), i.get("email"), i.get("role"), i.get("state"),
                               output.when(i.get("expiresAt")), output.when(i.get("sentAt")) or "not yet"]
                              for i in data.get("invites") or []),
                             empty="No pending invites.", shrink={"EMAIL": 12}, optional=("EMAILED", "EXPIRES")))

    output.emit(as_json, data, render)


@app.command("create")
def create(
    ctx: typer.Context,
    org: OrgArg,
    email: Annotated[str, typer.Argument(help="Who to invite.")],
    role: Annotated[Role, typer.Option(metavar="ROLE",
                                        help="The role they get on accepting: viewer, member or admin.")]
    = Role.member,
    as_json: JsonFlag = False,
) -> None:
    """Invite someone by email (admins). Inviting the same address again sends a fresh invite."""
    with Api.for_context(ctx) as api:
        invite = api.post(f"/v1/orgs/{seg(org)}/invites", {"email": email, "role": role.value})
        link = invite.get("url")
        if not link and invite.get("token") and not as_json:
            public = (api.get("/v1/config", auth=False).get("publicUrl") or state(ctx).api_url).rstrip("/")
            link = f"{public}/invites/{seg(str(invite['token']))}"

    def render(c: Console) -> None:
        from rich.text import Text

        c.print(Text.assemble("Invited ", (str(invite.get("email")), "bold"), f" to {org} as {invite.get('role')}",
                              f" (expires {output.when(invite.get('expiresAt'))}); the email is on its way."),
                soft_wrap=True)
        if link:
            c.print(Text("Invite link (shown only now; anyone with it can join):"), soft_wrap=True)
            c.print(Text(str(link)), soft_wrap=True)

    output.emit(as_json, invite, render)


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    org: OrgArg,
    invite: Annotated[str, typer.Argument(metavar="INVITE_ID", help="The invite's id, or its email address.")],
    as_json: JsonFlag = False,
) -> None:
    """Revoke a pending invite (admins); its link stops working."""
    with Api.for_context(ctx) as api:
        invite_id = invite
        if "@" in invite:
            rows: list[dict[str, Any]] = api.get(f"/v1/orgs/{seg(org)}/invites").get("invites") or []
            hits = [i for i in rows if str(i.get("email", "")).lower() == invite.lower()]
            if not hits:
                raise CliError(f"No invite for {invite} in org {org}", "not_found")
            invite_id = str(hits[0].get("id"))
        api.delete(f"/v1/orgs/{seg(org)}/invites/{seg(invite_id)}")
    output.emit_line(as_json, {"revoked": True, "org": org, "id": invite_id}, f"Revoked invite {invite} to {org}.")


@app.command("show")
def show(ctx: typer.Context, invite: TokenArg, as_json: JsonFlag = False) -> None:
    """Show what an invite is for (no sign-in needed)."""
    token = invite_token(invite)
    with Api.anonymous(ctx) as api:
        view = api.get(f"/v1/invites/{seg(token)}", auth=False)

    def render(c: Console) -> None:
        from rich.text import Text

        org = view.get("org") or {}
        c.print(Text.assemble("Invite to ", (str(org.get("name")), "bold"),
                              f" ({org.get('slug')}) as {view.get('role')}"), soft_wrap=True)
        c.print(Text(f"state:   {view.get('state')}"), soft_wrap=True)
        c.print(Text(f"expires: {output.when(view.get('expiresAt'))}"), soft_wrap=True)

    output.emit(as_json, view, render)


@app.command("accept")
def accept(ctx: typer.Context, invite: TokenArg, as_json: JsonFlag = False) -> None:
    """Accept an invite as the signed-in user."""
    token = invite_token(invite)
    with Api.for_context(ctx) as api:
        data = api.post(f"/v1/invites/{seg(token)}/accept")

    def render(c: Console) -> None:
        from rich.text import Text

        org = data.get("org") or {}
        name = Text.assemble((str(org.get("slug")), "bold"))
        if data.get("alreadyMember"):
            c.print(Text.assemble("You are already a member of ", name, "; your role is unchanged."), soft_wrap=True)
        else:
            role = f" as {data['role']}" if data.get("role") else ""
            c.print(Text.assemble("Joined ", name, f"{role}."), soft_wrap=True)

    output.emit(as_json, data, render)
