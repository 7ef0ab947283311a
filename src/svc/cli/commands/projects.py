"""`svc projects create|list|show|delete`, and how every project command finds its org and project.

The org: `--org`, else `SVC_ORG`, else `"org"` in ./svc.json, else your personal org (from /v1/me).
The project (commands other than `projects ...`): `--project`, else `SVC_PROJECT`, else `"project"`
in ./svc.json (`svc deploy DIR` reads DIR/svc.json instead).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import bundle, output
from svc.cli.client import Api, CliError, seg
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Projects of an org: create, list, show, delete."  # its line in `svc --help`
app = typer.Typer(help="Projects of an org: create, list, show, delete.", no_args_is_help=True)

OrgOption = Annotated[str | None, typer.Option(
    "--org", envvar="SVC_ORG", metavar="ORG",
    help="The org's slug (default: SVC_ORG, else \"org\" in ./svc.json, else your personal org).")]
ProjectOption = Annotated[str | None, typer.Option(
    "--project", "-p", envvar="SVC_PROJECT", metavar="NAME",
    help="The project (default: SVC_PROJECT, else \"project\" in ./svc.json).")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The project's name.")]

POLL_SECONDS = 1.0


def local_manifest(directory: Path = Path(".")) -> dict[str, Any]:
    """./svc.json when there is one (its "org" and "project" keys are defaults), else {}."""
    if not (directory / bundle.MANIFEST).is_file():
        return {}
    return bundle.read_manifest(directory)


def personal_org(api: Api) -> str:
    me = api.get("/v1/me")
    for o in me.get("orgs") or []:
        if o.get("personal"):
            return str(o["slug"])
    raise CliError("You have no personal org; name one with --org", "no_org")


def resolve_org(api: Api, org: str | None, manifest: dict[str, Any] | None = None) -> str:
    if org:
        return org
    from_file = (manifest or {}).get("org")
    if isinstance(from_file, str) and from_file:
        return from_file
    return personal_org(api)


def project_name(project: str | None, manifest: dict[str, Any] | None = None) -> str:
    if project:
        return project
    from_file = (manifest or {}).get("project")
    if isinstance(from_file, str) and from_file:
        return from_file
    raise CliError("Which project? Name it with --project NAME", "no_project",
                   hint='or set SVC_PROJECT, or run this in a folder whose svc.json has a "project" key')


def target(api: Api, org: str | None, project: str | None) -> tuple[str, str]:
    """(org, project) for the commands that act on one project, from the options and ./svc.json."""
    manifest = local_manifest() if not (org and project) else {}
    name = project_name(project, manifest)
    return resolve_org(api, org, manifest), name


def project_path(org: str, project: str) -> str:
    return f"/v1/orgs/{seg(org)}/projects/{seg(project)}"


def short_digest(digest: Any) -> str | None:
    if not isinstance(digest, str):
        return None
    algo, _, hexdigest = digest.partition(":")
    return f"{algo}:{hexdigest[:12]}" if hexdigest else digest[:19]


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME",
                                        help="Lowercase a-z, 0-9 and inner '-', 1-32 characters.")],
    org: OrgOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a project (members); it gets its default hostname at once."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org, local_manifest() if not org else None)
        created = api.post(f"/v1/orgs/{seg(slug)}/projects", {"name": name})
    output.emit_line(as_json, created, "Created project ", (str(created.get("name")), "bold"),
                     f" in {created.get('org')}; it will be served at ", (str(created.get("url")), "bold"), ".")


@app.command("list")
def list_projects(ctx: typer.Context, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """List an org's projects."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org, local_manifest() if not org else None)
        data = api.get(f"/v1/orgs/{seg(slug)}/projects")

    def render(c: Console) -> None:
        c.print(output.table(["NAME", "URL", "CREATED"],
                             ([p.get("name"), p.get("url"), output.when(p.get("createdAt"))]
                              for p in data.get("projects") or []), empty=f"No projects in {slug}."))

    output.emit(as_json, data, render)


@app.command("show")
def show(ctx: typer.Context, name: NameArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Show a project: its address, hostnames, live deployment and access mode."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org, local_manifest() if not org else None)
        data = api.get(project_path(slug, name))

    def render(c: Console) -> None:
        live = data.get("liveDeployment")
        if isinstance(live, dict):
            git = live.get("git") or {}
            commit = f", {str(git['commit'])[:7]}" if git.get("commit") else ""
            serving = (f"version {live.get('version')} ({short_digest(live.get('digest'))}{commit}), "
                       f"by {live.get('uploader') or '-'} at {output.when(live.get('createdAt'))}")
        else:
            serving = "no deployment yet"
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        for label, value in (("Project", f"{data.get('name')} (org {data.get('org')})"), ("URL", data.get("url")),
                             ("Hostnames", ", ".join(data.get("hostnames") or []) or None), ("Live", serving),
                             ("Access", data.get("accessMode")), ("State", data.get("state")),
                             ("Created", output.when(data.get("createdAt")))):
            grid.add_row(Text(label), output.cell(value))
        c.print(grid)

    output.emit(as_json, data, render)


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: NameArg,
    org: OrgOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", "--confirm",
                                      help="Do not ask to type the name (for scripts).")] = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait",
                                       help="Follow the teardown until it is done (default), or return at once.")]
    = True,
    timeout: Annotated[float, typer.Option(min=1, metavar="SECONDS", help="Seconds to follow the teardown.")]
    = 600,
    as_json: JsonFlag = False,
) -> None:
    """Delete a project and everything it holds (admins). Irreversible; asks you to type the name unless --yes."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org, local_manifest() if not org else None)
        confirm = name
        if not yes:
            typed = output.ask(f"This deletes the project {name!r} of {slug} with all its deployments, hostnames "
                               "and secrets; it cannot be undone. Type its name to confirm: ")
            if typed.strip() != name:
                raise CliError("The name you typed does not match; nothing was deleted", "confirm_mismatch")
            confirm = typed.strip()
        started = api.delete(project_path(slug, name), {"confirm": confirm})
        op_id = str(started.get("operationId"))
        if not wait:
            output.emit_line(as_json, started, "Deleting ", (name, "bold"),
                             f" (operation {op_id}); it continues on the server.")
            return
        op = follow_operation(api, slug, op_id, f"Deleting {name}", timeout=timeout)
    code = op.get("terminalCode")
    if code not in (None, "ok"):
        raise CliError(f"Deleting {name} ended with {code} in phase {op.get('phase')}", "operation_failed",
                       details=op)
    output.emit_line(as_json, op, "Deleted project ", (name, "bold"), f" of {slug}.")


def follow_operation(api: Api, org: str, op_id: str, label: str, *, timeout: float) -> dict[str, Any]:
    """Poll GET /v1/orgs/{org}/operations/{opId} about once a second, with a spinner showing the phase,
    until its phase is done (or it has a terminal code)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # only when needed

    path = f"/v1/orgs/{seg(org)}/operations/{seg(op_id)}"
    deadline = time.monotonic() + timeout
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False),
               TextColumn("{task.fields[phase]}", markup=False, style="dim"), TimeElapsedColumn())
    with Progress(*columns, console=output.err(), transient=False) as progress:
        task = progress.add_task(label, total=None, phase="starting")
        while True:
            op: dict[str, Any] = api.get(path)
            phase = str(op.get("phase"))
            progress.update(task, phase=phase)
            if phase == "done" or op.get("terminalCode") is not None:
                progress.update(task, total=1, completed=1)
                return op
            if time.monotonic() >= deadline:
                raise CliError(f"{label}: still in phase {phase} after {timeout:g} s", "timeout",
                               hint=f"it continues on the server; see GET {path}")
            time.sleep(POLL_SECONDS)
