"""`svc repos list|create|show|rename|update|delete|clone-url|history`: a project's git repositories."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "A project's git repositories (clone and push over HTTPS or SSH)."  # its line in `svc --help`
app = typer.Typer(help="A project's git repositories: clone and push over HTTPS (with `svc git-credential`) or "
                       "SSH (with `svc keys add`); a push to the default branch deploys.", no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The repository's name.")]
Visibility = Annotated[str | None, typer.Option(
    "--visibility", metavar="private|public", help="public: anyone may clone (pushes still need a member).")]
Branch = Annotated[str | None, typer.Option("--default-branch", metavar="BRANCH",
                                            help="The branch clones check out; a push to it deploys.")]


def _repos(slug: str, proj: str) -> str:
    return f"{project_path(slug, proj)}/repos"


def _check_visibility(visibility: str | None) -> None:
    if visibility is not None and visibility not in ("private", "public"):
        raise CliError(f"--visibility is private or public, not {visibility!r}", "bad_request")


def _describe(c: Console, repo: dict[str, Any]) -> None:
    c.print(output.table(["NAME", "VISIBILITY", "DEFAULT BRANCH", "CLONE (HTTPS)", "CLONE (SSH)"],
                         [[repo.get("name"), repo.get("visibility"), repo.get("defaultBranch"), repo.get("cloneUrl"),
                           repo.get("sshUrl") or "-"]], shrink={"CLONE (HTTPS)": 20}, optional=("CLONE (SSH)",)))


@app.command("list")
def list_repos(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
               as_json: JsonFlag = False) -> None:
    """List a project's repositories with their clone URLs."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(_repos(slug, proj))

    def render(c: Console) -> None:
        c.print(output.table(["NAME", "VISIBILITY", "DEFAULT BRANCH", "CLONE URL", "CREATED"],
                             ([r.get("name"), r.get("visibility"), r.get("defaultBranch"), r.get("cloneUrl"),
                               output.when(r.get("createdAt"))] for r in data.get("repos") or []),
                             empty=f"No repositories in {proj}: svc repos create NAME", shrink={"CLONE URL": 20},
                             optional=("CREATED",)))

    output.emit(as_json, data, render)


@app.command("create")
def create(ctx: typer.Context, name: NameArg, visibility: Visibility = None, default_branch: Branch = None,
           project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Create a repository (members); it is empty until the first push."""
    _check_visibility(visibility)
    body: dict[str, Any] = {"name": name}
    if visibility:
        body["visibility"] = visibility
    if default_branch:
        body["defaultBranch"] = default_branch
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        repo = api.post(_repos(slug, proj), body)

    def render(c: Console) -> None:
        output.say(f"Created repository {repo.get('name')} in {slug}/{proj}. Push to it:")
        c.print(f"  git remote add svc {repo.get('cloneUrl')}")
        c.print(f"  git push svc {repo.get('defaultBranch')}")
        output.note("A push to the default branch of a tree with svc.json at its root deploys it. "
                    "For HTTPS, let git ask svc for a token: svc git-credential install")

    output.emit(as_json, repo, render)


@app.command("show")
def show(ctx: typer.Context, name: NameArg, project: ProjectOption = None, org: OrgOption = None,
         as_json: JsonFlag = False) -> None:
    """Show a repository and its clone URLs."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        repo = api.get(f"{_repos(slug, proj)}/{seg(name)}")
    output.emit(as_json, repo, lambda c: _describe(c, repo))


def _update(ctx: typer.Context, name: str, body: dict[str, Any], project: str | None, org: str | None,
            as_json: bool, said: str) -> None:
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        api.patch(f"{_repos(slug, proj)}/{seg(name)}", body)
        repo = api.get(f"{_repos(slug, proj)}/{seg(body.get('name', name))}")
    output.emit_line(as_json, repo, said, (str(repo.get("name")), "bold"), f" in {slug}/{proj}.")


@app.command("rename")
def rename(ctx: typer.Context, name: NameArg, new_name: Annotated[str, typer.Argument(metavar="NEW_NAME")],
           project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Rename a repository (admins). Old git URLs keep working until another repository takes the name."""
    _update(ctx, name, {"name": new_name}, project, org, as_json, "Renamed to ")


@app.command("update")
def update(ctx: typer.Context, name: NameArg, visibility: Visibility = None, default_branch: Branch = None,
           project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Change a repository's visibility or default branch (admins)."""
    _check_visibility(visibility)
    body = {k: v for k, v in (("visibility", visibility), ("defaultBranch", default_branch)) if v}
    if not body:
        raise CliError("Nothing to change: give --visibility or --default-branch", "bad_request")
    _update(ctx, name, body, project, org, as_json, "Updated ")


@app.command("delete")
def delete(ctx: typer.Context, name: NameArg, yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Do not ask for confirmation.")] = False,
           project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Delete a repository (admins): its URLs stop at once; the data is removed after 30 days."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        if not yes and output.ask(f"Delete repository {name} of {slug}/{proj}? Type its name to confirm: ") != name:
            raise CliError("Not confirmed; nothing was deleted", "not_confirmed")
        api.delete(f"{_repos(slug, proj)}/{seg(name)}")
    output.emit_line(as_json, {"deleted": True, "org": slug, "project": proj, "name": name},
                     "Deleted repository ", (name, "bold"), f" of {slug}/{proj}.")


@app.command("clone-url")
def clone_url(ctx: typer.Context, name: NameArg, ssh: Annotated[bool, typer.Option(
        "--ssh", help="The SSH URL (needs a key: svc keys add).")] = False,
              project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Print a repository's clone URL (HTTPS, or --ssh)."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        repo = api.get(f"{_repos(slug, proj)}/{seg(name)}")
    url = repo.get("sshUrl") if ssh else repo.get("cloneUrl")
    if not url:
        raise CliError("This svc runs no SSH server; clone over HTTPS", "ssh_unavailable")
    if as_json:
        output.print_json({"url": url})
    else:
        print(url)


@app.command("history")
def history(ctx: typer.Context, name: NameArg, project: ProjectOption = None, org: OrgOption = None,
            as_json: JsonFlag = False) -> None:
    """The repository's ref changes, newest first (the most recent 200); OLD recovers a force-pushed commit."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(f"{_repos(slug, proj)}/{seg(name)}/ref-updates")

    def render(c: Console) -> None:
        c.print(output.table(["WHEN", "REF", "OLD", "NEW", "PUSHER", "DEPLOYED"],
                             ([output.when(u.get("at")), u.get("ref"), str(u.get("old"))[:12], str(u.get("new"))[:12],
                               u.get("pusher"), f"v{u['deployment']['version']}" if u.get("deployment") else "-"]
                              for u in data.get("updates") or []), empty="No pushes yet.",
                             shrink={"REF": 12, "PUSHER": 10}, optional=("DEPLOYED",)))

    output.emit(as_json, data, render)
