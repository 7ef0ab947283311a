"""`svc tokens list|create|revoke`: personal access tokens (for git over HTTPS, scripts, CI)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, seg
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Your personal access tokens (svc_pat_...)."  # its line in `svc --help`
app = typer.Typer(help="Your personal access tokens (svc_pat_...).", no_args_is_help=True)


def _status(t: dict[str, Any]) -> str:
    if t.get("revokedAt"):
        return "revoked"
    return "active"


@app.command("list")
def list_tokens(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List your access tokens (never their values)."""
    with Api.for_context(ctx) as api:
        data = api.get("/v1/me/tokens")

    def render(c: Console) -> None:
        c.print(output.table(["ID", "NAME", "TOKEN", "STATUS", "CREATED", "EXPIRES", "REVOKED"],
                             ([t.get("id"), t.get("name"), t.get("hint"), _status(t), output.when(t.get("createdAt")),
                               output.when(t.get("expiresAt")) or "never", output.when(t.get("revokedAt"))]
                              for t in data.get("tokens") or []), empty="No access tokens.",
                             shrink={"NAME": 8}, optional=("REVOKED", "CREATED")))

    output.emit(as_json, data, render)


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="What the token is for, e.g. 'ci'.")],
    expires_in_days: Annotated[int | None, typer.Option(
        "--expires-in-days", min=1, metavar="DAYS", help="Days until it stops working (default: never).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an access token and print it once. Needs a browser/dev session, not another token."""
    body: dict[str, Any] = {"name": name}
    if expires_in_days is not None:
        body["expiresInDays"] = expires_in_days
    with Api.for_context(ctx) as api:
        created = api.post("/v1/me/tokens", body)

    def render(c: Console) -> None:
        from rich.text import Text

        expiry = output.when(created.get("expiresAt")) or "never"
        c.print(Text(f"Created access token {created.get('name')!r} ({created.get('id')}, expires: {expiry})."),
                soft_wrap=True)
        c.print(Text("Copy it now; it is not shown again:"), soft_wrap=True)
        c.print(Text(str(created.get("token")), style="bold"), soft_wrap=True)

    output.emit(as_json, created, render)


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(metavar="TOKEN_ID", help="The token's id (see `svc tokens list`).")],
    as_json: JsonFlag = False,
) -> None:
    """Revoke an access token; it stops working at once."""
    with Api.for_context(ctx) as api:
        api.delete(f"/v1/me/tokens/{seg(token_id)}")
    output.emit_line(as_json, {"revoked": True, "id": token_id}, f"Revoked access token {token_id}.")
