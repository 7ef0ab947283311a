"""`svc tokens list|create|revoke`: personal access tokens (for git over HTTPS, scripts, CI)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.commands.projects import OrgOption, local_manifest, resolve_org
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Your personal access tokens (svc_pat_...)."  # its line in `svc --help`
app = typer.Typer(help="Your personal access tokens (svc_pat_...).", no_args_is_help=True)


def _status(t: dict[str, Any]) -> str:
    if t.get("revokedAt"):
        return "revoked"
    return "active"


def limits(t: dict[str, Any]) -> str:
    """What a token is limited to, in words: "project acme/web, read-only", "read-only" or "-"."""
    said = []
    project = t.get("project")
    if isinstance(project, dict):
        said.append(f"project {project.get('org')}/{project.get('name')}")
    if t.get("readOnly"):
        said.append("read-only")
    return ", ".join(said) or "-"


def _project_ref(api: Api, project: str, org: str | None) -> dict[str, str]:
    """--project ORG/NAME (its org wins over --org), or NAME in --org (default: SVC_ORG, else "org" in
    ./svc.json, else your personal org). Never taken from SVC_PROJECT or svc.json alone: a limit is
    asked for by name."""
    if "/" in project:
        org_part, _, name = project.partition("/")
        if not org_part or not name or "/" in name:
            raise CliError(f"{project!r} is not a project: give ORG/NAME or NAME", "bad_request")
        return {"org": org_part, "name": name}
    if not project:
        raise CliError("--project needs a project: ORG/NAME or NAME", "bad_request")
    return {"org": resolve_org(api, org, local_manifest() if not org else None), "name": project}


@app.command("list")
def list_tokens(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List your access tokens (never their values)."""
    with Api.for_context(ctx) as api:
        data = api.get("/v1/me/tokens")

    def render(c: Console) -> None:
        c.print(output.table(["ID", "NAME", "TOKEN", "STATUS", "LIMITS", "CREATED", "EXPIRES", "REVOKED"],
                             ([t.get("id"), t.get("name"), t.get("hint"), _status(t), limits(t),
                               output.when(t.get("createdAt")), output.when(t.get("expiresAt")) or "never",
                               output.when(t.get("revokedAt"))]
                              for t in data.get("tokens") or []), empty="No access tokens.",
                             shrink={"NAME": 8, "LIMITS": 10}, optional=("REVOKED", "CREATED")))

    output.emit(as_json, data, render)


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="What the token is for, e.g. 'ci'.")],
    expires_in_days: Annotated[int | None, typer.Option(
        "--expires-in-days", min=1, metavar="DAYS", help="Days until it stops working (default: never).")] = None,
    project: Annotated[str | None, typer.Option(
        "--project", "-p", metavar="ORG/NAME",
        help="Limit it to one project: ORG/NAME, or NAME in --org (then --org's default applies). It can then "
             "change only that project and read its org and your account.")] = None,
    org: OrgOption = None,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Limit it to reading: any change it asks for is refused.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Create an access token and print it once. Needs a browser/dev session, not another token.

    For CI, give it the least it needs: --project ORG/NAME and, when it only reads, --read-only."""
    body: dict[str, Any] = {"name": name}
    if expires_in_days is not None:
        body["expiresInDays"] = expires_in_days
    if read_only:
        body["readOnly"] = True
    with Api.for_context(ctx) as api:
        if project is not None:
            body["project"] = _project_ref(api, project, org)
        created = api.post("/v1/me/tokens", body)

    def render(c: Console) -> None:
        from rich.text import Text

        expiry = output.when(created.get("expiresAt")) or "never"
        limited = limits(created)
        limited = "" if limited == "-" else f", limits: {limited}"
        c.print(Text(f"Created access token {created.get('name')!r} ({created.get('id')}, expires: {expiry}"
                     f"{limited})."), soft_wrap=True)
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
