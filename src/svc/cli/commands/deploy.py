"""`svc deploy [DIR]`, `svc deployments`, `svc rollback VERSION`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import IO, Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.text import Text

from svc.cli import bundle, output
from svc.cli.client import USER_AGENT, Api, ApiError, CliError, ConnectionFailed, decode, seg
from svc.cli.commands.projects import (
    OrgOption,
    ProjectOption,
    project_name,
    project_path,
    resolve_org,
    short_digest,
    target,
)
from svc.cli.output import JsonFlag

# Uploads may be large and the server unpacks before it answers: no overall limit on writing,
# a generous one on waiting for the answer.
UPLOAD_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=300.0, pool=10.0)


def human(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def ensure_project(api: Api, org: str, name: str) -> dict[str, Any]:
    """The project (GET), created first when it does not exist yet."""
    try:
        found: dict[str, Any] = api.get(project_path(org, name))
        return found
    except ApiError as exc:
        if exc.status != 404:
            raise
    created: dict[str, Any] = api.post(f"/v1/orgs/{seg(org)}/projects", {"name": name})
    output.note(Text.assemble("Created project ", (name, "bold"), f" in {org}."))
    return created


def upload(api: Api, path: str, body: IO[bytes], size: int, headers: dict[str, str]) -> dict[str, Any]:
    """POST the bundle file as a stream of chunks (never whole in memory), with a progress bar in bytes."""
    from rich.progress import (  # only when needed
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    if not api.token:
        raise CliError(f"Not signed in to {api.base_url}", "not_signed_in", hint="run `svc login` (or set SVC_TOKEN)")
    columns = (TextColumn("Uploading"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=output.err()) as progress, \
            httpx.Client(base_url=api.base_url, timeout=UPLOAD_TIMEOUT, follow_redirects=False) as http:
        task = progress.add_task("upload", total=size)
        chunks = bundle.read_chunks(body, on_chunk=lambda n: progress.advance(task, n))
        request_headers = {"user-agent": USER_AGENT, "accept": "application/json",
                           "authorization": f"Bearer {api.token}", "content-type": "application/gzip",
                           "content-length": str(size), **headers}
        try:
            r = http.post(path, content=chunks, headers=request_headers)
        except httpx.ConnectError as exc:
            raise ConnectionFailed(f"Cannot reach the svc API at {api.base_url}: {exc}", "connection_failed",
                                   hint="check --api-url / SVC_API_URL and that the server is running") from None
        except httpx.TransportError as exc:
            raise CliError(f"The upload did not complete: {str(exc) or type(exc).__name__}", "upload_failed",
                           hint="the server may have refused the bundle early (e.g. over its size bound); "
                                "try again") from None
    result: dict[str, Any] = decode(r)
    return result


def deploy(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The folder to deploy; it needs a svc.json.")]
    = Path("."),
    project: ProjectOption = None,
    org: OrgOption = None,
    no_git: Annotated[bool, typer.Option("--no-git", help="Do not send the git commit, branch and message.")]
    = False,
    as_json: JsonFlag = False,
) -> None:
    """Pack DIR (default: .) with its svc.json, upload it, and make it live at once.

    The project: --project, else SVC_PROJECT, else "project" in DIR/svc.json (created if missing).

    DIR's assets/ and worker/ are packed as they are; without either, DIR's files become the site."""
    directory = directory.expanduser()
    if not directory.is_dir():
        raise CliError(f"{directory} is not a folder", "not_a_directory")
    manifest = bundle.read_manifest(directory)
    name = project_name(project, manifest)
    git = None if no_git else bundle.git_info(directory)
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org, manifest)
        info = ensure_project(api, slug, name)
        with tempfile.TemporaryFile(prefix="svc-bundle-") as f:
            packed = bundle.pack(directory, f, manifest)
            for skipped in packed.skipped:
                output.note(f"skipped {skipped}")
            layout = "" if packed.layout == "assets" else " (the folder as the site: assets/)"
            output.note(f"Packed {packed.files} files ({human(packed.unpacked_bytes)}) into "
                        f"{human(packed.size)}{layout}.")
            created = upload(api, f"{project_path(slug, name)}/deployments", f, packed.size,
                             git.headers() if git else {})
    url = info.get("url")
    result = {**created, "url": url}

    def render(c: Console) -> None:
        line = Text.assemble("Deployed version ", (str(created.get("version")), "bold"), " of ", (name, "bold"),
                             f" ({short_digest(created.get('digest'))})")
        if git:
            line.append(f" from {git.commit[:7]}" + (f" on {git.branch}" if git.branch else "")
                        + (" with uncommitted changes" if git.dirty else ""))
        line.append(".")
        c.print(line, soft_wrap=True)
        c.print(Text.assemble("Live at ", (str(url), "bold")), soft_wrap=True)

    output.emit(as_json, result, render)


def _git_cell(git: dict[str, Any]) -> str | None:
    commit = git.get("commit")
    if not commit:
        return None
    return str(commit)[:7] + (" (dirty)" if git.get("dirty") else "")


def deployments(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
                as_json: JsonFlag = False) -> None:
    """List a project's deployments, newest first."""
    with Api.for_context(ctx) as api:
        slug, name = target(api, org, project)
        data = api.get(f"{project_path(slug, name)}/deployments")

    def row(d: dict[str, Any]) -> list[Any]:
        git = d.get("git") or {}
        live = Text("live", style="bold green") if d.get("live") else None
        return [d.get("version"), live, short_digest(d.get("digest")), d.get("uploader"), _git_cell(git),
                git.get("branch"), git.get("message"), output.when(d.get("createdAt"))]

    def render(c: Console) -> None:
        c.print(output.table(["VERSION", "LIVE", "DIGEST", "UPLOADER", "COMMIT", "BRANCH", "MESSAGE", "CREATED"],
                             (row(d) for d in data.get("deployments") or []),
                             empty=f"No deployments of {name} yet; run `svc deploy`."))

    output.emit(as_json, data, render)


def rollback(
    ctx: typer.Context,
    version: Annotated[int, typer.Argument(metavar="VERSION", min=1, help="The version to make live again.")],
    project: ProjectOption = None,
    org: OrgOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Make an earlier deployment live again (moves the live pointer; creates no new deployment)."""
    with Api.for_context(ctx) as api:
        slug, name = target(api, org, project)
        dep = api.post(f"{project_path(slug, name)}/rollback", {"version": version})
        url = api.get(project_path(slug, name)).get("url")
    result = {**dep, "url": url}

    def render(c: Console) -> None:
        c.print(Text.assemble("Version ", (str(dep.get("version")), "bold"), " of ", (name, "bold"),
                              f" ({short_digest(dep.get('digest'))}) is live at ", (str(url), "bold"), "."),
                soft_wrap=True)

    output.emit(as_json, result, render)
