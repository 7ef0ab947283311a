"""`svc deploy [DIR]`, `svc deployments`, `svc rollback VERSION`."""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import bundle, output, transport
from svc.cli.client import USER_AGENT, Api, ApiError, CliError, decode, seg, unreachable
from svc.cli.commands.projects import (
    OrgOption,
    ProjectOption,
    project_path,
    resolve_org,
    short_digest,
    target,
)
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

# The server's bound on a bundle's compressed size (decisions.md: 100 MiB), unless its operator
# raised it with SVC_MAX_BUNDLE_BYTES: the CLI reads the same variable, so it refuses what the
# server would refuse before sending a byte.
DEFAULT_MAX_BUNDLE_BYTES = 100 * 1024 * 1024
MAX_BUNDLE_ENV = "SVC_MAX_BUNDLE_BYTES"


def _page(url: Any) -> str:
    """A project's address as people open it: its home page, with the path's slash."""
    text = str(url)
    return text if text.endswith("/") or "/" in text.split("://", 1)[-1] else text + "/"


def human(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def binary(n: int) -> str:
    """104857600 -> `100 MiB` (the unit the bound is set in), else kB/MB as `human`."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return human(n)


def max_bundle_bytes() -> int:
    """The bound on the compressed bundle: SVC_MAX_BUNDLE_BYTES when set, else 100 MiB."""
    raw = os.environ.get(MAX_BUNDLE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BUNDLE_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise CliError(f"{MAX_BUNDLE_ENV} must be a whole number of bytes above 0, not {raw!r}", "bad_setting",
                       hint=f"unset it to use the default bound ({binary(DEFAULT_MAX_BUNDLE_BYTES)})")
    return value


def too_large(size: int, bound: int, *, files: int | None = None) -> CliError:
    """`bundle_too_large`, as the server would say it, with the size and the bound; found before any upload.
    With `files`, packing stopped early: the bundle was already `size` bytes after that many files."""
    source = MAX_BUNDLE_ENV if os.environ.get(MAX_BUNDLE_ENV, "").strip() else "the default"
    so_far = f"already {size:,} bytes ({human(size)}) compressed after {files:,} files" if files is not None \
        else f"{size:,} bytes ({human(size)}) compressed"
    return CliError(f"The bundle is {so_far}, over the bound of {bound:,} bytes ({binary(bound)}, {source}); "
                    "nothing was uploaded", "bundle_too_large",
                    details={"limit": "compressed", "max": bound, "size": size},
                    hint="leave large files out of the folder (dot-files and node_modules are skipped already); "
                         f"if the server's operator raised its bound, set {MAX_BUNDLE_ENV} to the same value")


def ensure_project(api: Api, org: str, name: str) -> dict[str, Any]:
    """The project (GET), created first when it does not exist yet."""
    try:
        found: dict[str, Any] = api.get(project_path(org, name))
        return found
    except ApiError as exc:
        if exc.status != 404:
            raise
    created: dict[str, Any] = api.post(f"/v1/orgs/{seg(org)}/projects", {"name": name})
    output.note(f"Created project {name} in {org}.")
    return created


def upload(api: Api, path: str, body: IO[bytes], size: int, headers: dict[str, str]) -> dict[str, Any]:
    """POST the bundle file as a stream of chunks (never whole in memory), with its Content-Length and
    a progress bar in bytes."""
    if not api.token:
        raise api.not_signed_in()
    with output.transfer_bar("Uploading") as progress:
        task = progress.add_task("upload", total=size)
        chunks = bundle.read_chunks(body, on_chunk=lambda n: progress.advance(task, n))
        # An explicit Content-Length: the body is not sent chunked, and the server can refuse an
        # oversize bundle from the headers alone.
        request_headers = {"user-agent": USER_AGENT, "accept": "application/json",
                           "authorization": f"Bearer {api.token}", "content-type": "application/gzip",
                           "content-length": str(size), **headers}
        try:
            # Uploads may be large and the server unpacks before it answers: a generous bound on waiting.
            r = api.http.request("POST", path, content=chunks, headers=request_headers, read_seconds=300.0)
        except transport.ConnectFailed as exc:
            raise unreachable(exc, api.base_url, api.origin) from None
        except transport.TransportError as exc:
            raise CliError(f"The upload did not complete: {str(exc) or type(exc).__name__}", "upload_failed",
                           hint="the server may have refused the bundle early (e.g. over its size bound); "
                                "try again") from None
    result: dict[str, Any] = decode(r, api.base_url, api.origin)
    return result


def _which_project(directory: Path, project: str | None, manifest: dict[str, Any] | None) -> str:
    if project:
        return project
    named = (manifest or {}).get("project")
    if isinstance(named, str) and named:
        return named
    here = directory == Path(".")
    manifest_path = bundle.MANIFEST if here else str(directory / bundle.MANIFEST)
    if manifest is None:
        command = "svc deploy --project NAME" if here else f"svc deploy {shlex.quote(str(directory))} --project NAME"
        raise CliError(f"Which project? {'This folder' if here else directory} has no svc.json to name it, and no "
                       "--project was given", "no_project",
                       hint=f"run `{command}` (the project is created if it does not exist), or add {manifest_path} "
                            'with {"project": "NAME"}')
    raise CliError(f'Which project? Name it with --project NAME; {manifest_path} has no "project"', "no_project",
                   hint=f'or set SVC_PROJECT, or add "project": "NAME" to {manifest_path}')


def deploy(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The folder to deploy.")] = Path("."),
    project: ProjectOption = None,
    org: OrgOption = None,
    no_git: Annotated[bool, typer.Option("--no-git", help="Do not send the git commit, branch and message.")]
    = False,
    as_json: JsonFlag = False,
) -> None:
    """Pack DIR (default: .), upload it, and make it live at once.

    The project: --project, else SVC_PROJECT, else "project" in DIR/svc.json; it is created if missing.
    DIR needs no svc.json when --project names the project (the bundle then gets an empty one).

    DIR's assets/ and worker/ are packed as they are; without either, DIR's files become the site."""
    directory = directory.expanduser()
    if not directory.is_dir():
        raise CliError(f"{directory} is not a folder", "not_a_directory")
    has_manifest = (directory / bundle.MANIFEST).is_file()
    manifest = bundle.read_manifest(directory) if has_manifest else None
    name = _which_project(directory, project, manifest)
    bound = max_bundle_bytes()
    git = None if no_git else bundle.git_info(directory)
    with Api.for_context(ctx) as api:
        if not api.token:
            raise api.not_signed_in()
        slug = resolve_org(api, org, manifest)
        with tempfile.TemporaryFile(prefix="svc-bundle-") as f:
            try:
                packed = bundle.pack(directory, f, manifest or {}, max_bytes=bound)
            except bundle.OverBound as exc:
                raise too_large(exc.size, bound, files=exc.files) from None
            for skipped in packed.skipped:
                output.note(f"skipped {skipped}")
            if packed.manifest_added:
                where = "This folder" if directory == Path(".") else str(directory)
                output.note(f"{where} has no svc.json: the bundle gets an empty one ({{}}).")
            layout = "" if packed.layout == "assets" else " (the folder as the site: assets/)"
            files = f"{packed.files} file{'' if packed.files == 1 else 's'}"
            output.note(f"Packed {files} ({human(packed.unpacked_bytes)}) into {human(packed.size)}{layout}.")
            if git is not None and git.root is not None and git.root.resolve() != directory.resolve():
                # A folder inside a repository (a site in a monorepo, or a folder that merely lies
                # in someone's checkout): whose commit is recorded is said, and can be left out.
                output.note(f"Recording the commit {git.commit[:7]} of the git repository at {git.root}, which "
                            f"holds this folder (--no-git leaves it out).")
            if packed.size > bound:
                raise too_large(packed.size, bound)
            info = ensure_project(api, slug, name)
            created = upload(api, f"{project_path(slug, name)}/deployments", f, packed.size,
                             git.headers() if git else {})
        lacking = not_granted(api, slug, name, manifest or {}, name_org=bool(org or (manifest or {}).get("org")))
    url = info.get("url")
    result = {**created, "url": url}
    if lacking:
        result["notGranted"] = lacking
    worker = created.get("worker")
    if worker and url:
        # The worker's first request, as a visitor makes it: whether the new code answers.
        result["firstRequest"] = first_request(str(url))

    def render(c: Console) -> None:
        from rich.text import Text

        line = Text.assemble("Deployed version ", (str(created.get("version")), "bold"), " of ", (name, "bold"),
                             f" ({short_digest(created.get('digest'))})")
        if git:
            line.append(f" from {git.commit[:7]}" + (f" on {git.branch}" if git.branch else "")
                        + (" with uncommitted changes" if git.dirty else ""))
        line.append(".")
        c.print(line, soft_wrap=True)
        if worker:
            first = result.get("firstRequest") or {}
            answered = (f"GET / answered {first['status']} in {first['ms']} ms" if "status" in first
                        else f"GET / did not answer: {first.get('error')}")
            c.print(Text.assemble("With its worker (", (f"worker/{worker.get('main')}", "bold"),
                                  f", compatibility date {worker.get('compatibilityDate')}): {answered}."),
                    soft_wrap=True)
        c.print(Text.assemble("Live at ", (_page(url), "bold")), soft_wrap=True)
        for missing in lacking:
            c.print(_asks_for(name, missing), soft_wrap=True)

    output.emit(as_json, result, render)


# How the CLI grants each resource a bundle's svc.json may declare (decisions.md: db, storage,
# email, auth, ai), and what the worker gets (auth: nothing in env, the signed-in user in a request
# header); a resource without a command is one svc does not offer yet.
GRANTS: dict[str, tuple[str | None, str | None]] = {
    "db": ("env.db", "svc db create"),
    "ai": ("env.ai", "svc ai grant"),
    "storage": ("env.storage", "svc storage grant"),
    "email": ("env.email", "svc email grant"),
    "auth": (None, "svc auth grant"),
}


def not_granted(api: Api, org: str, project: str, manifest: dict[str, Any], *,
                name_org: bool = False) -> list[dict[str, Any]]:
    """The resources svc.json declares that the project does not have (the ProjectOverview's
    `resources`: declared, not provisioned), each with the command that grants it. The org is named
    in the command when it is not the personal one (--org, SVC_ORG or svc.json's: the command may
    run in another folder or shell)."""
    if not any(manifest.get(name) is True for name in GRANTS):
        return []
    resources = api.get(f"{project_path(org, project)}/overview").get("resources") or {}
    found = []
    for name, (binding, command) in GRANTS.items():
        state = resources.get(name) or {}
        if manifest.get(name) is not True or state.get("provisioned"):
            continue
        where = f" --org {shlex.quote(org)}" if name_org else ""
        found.append({"resource": name, "binding": binding,
                      "command": f"{command} --project {shlex.quote(project)}{where}" if command else None})
    return found


def _asks_for(project: str, missing: dict[str, Any]) -> str:
    name, binding, command = missing["resource"], missing["binding"], missing["command"]
    gets = f" ({binding})" if binding else ""
    if command is None:
        return f'svc.json asks for "{name}": true{gets}, which this svc does not offer yet.'
    then = " Its calls are paid from the org's AI credit: `svc ai topup 5` buys some." if name == "ai" else ""
    return f'svc.json asks for "{name}": true{gets}, which {project} does not have yet: `{command}` grants it.{then}'


def first_request(url: str) -> dict[str, Any]:
    """GET the project's home page once: {"status", "ms"}, or {"error"} when it cannot be reached."""
    import time
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    headers = {}
    host = (parts.hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        # Loopback by definition (RFC 6761), as browsers resolve it; the system resolver may not.
        headers["Host"] = parts.netloc
        url = parts._replace(netloc=f"127.0.0.1:{parts.port}" if parts.port else "127.0.0.1").geturl()
    started = time.monotonic()
    try:
        status = transport.get(url, headers=headers, seconds=10).status_code
    except transport.TransportError as exc:
        return {"error": str(exc) or type(exc).__name__}
    return {"status": status, "ms": round((time.monotonic() - started) * 1000)}


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
        from rich.text import Text

        git = d.get("git") or {}
        live = Text("live", style="bold green") if d.get("live") else None
        return [d.get("version"), live, short_digest(d.get("digest")), d.get("uploader"), _git_cell(git),
                git.get("branch"), git.get("message"), output.when(d.get("createdAt"))]

    def render(c: Console) -> None:
        # On a narrow terminal the message, branch, uploader (and the "(dirty)" of a commit) are cut with
        # an ellipsis; narrower still, UPLOADER and BRANCH are left out (`--json` has everything).
        c.print(output.table(["VERSION", "LIVE", "DIGEST", "UPLOADER", "COMMIT", "BRANCH", "MESSAGE", "CREATED"],
                             (row(d) for d in data.get("deployments") or []),
                             empty=f"No deployments of {name} yet; run `svc deploy`.",
                             shrink=[{"MESSAGE": 10, "BRANCH": 6, "UPLOADER": 6}, {"COMMIT": 7}],
                             optional=("UPLOADER", "BRANCH")))

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
        from rich.text import Text

        c.print(Text.assemble("Version ", (str(dep.get("version")), "bold"), " of ", (name, "bold"),
                              f" ({short_digest(dep.get('digest'))}) is live at ", (_page(url), "bold"), "."),
                soft_wrap=True)

    output.emit(as_json, result, render)
