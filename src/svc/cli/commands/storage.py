"""`svc storage status|grant|revoke|ls|cp|rm`: a project's object storage (its worker's env.storage).

A key in the project's storage is written with a leading `:` where a local path could stand
(`svc storage cp ./a.png :img/a.png` uploads, `svc storage cp :img/a.png .` downloads; `-` is
standard input or output); `ls` and `rm` take keys with or without it. Bodies stream both ways:
an upload is sent from the file in chunks with its Content-Length (standard input is first copied
to a temporary file, as the API needs the length before the body), a download is written as it
arrives, to a temporary file renamed into place once whole; neither is ever held in memory."""

from __future__ import annotations

import contextlib
import mimetypes
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output, transport
from svc.cli.client import USER_AGENT, Api, ApiError, CliError, decode, unreachable
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

HELP = "Object storage for a project (env.storage): grant, usage, list, copy up and down, remove."
app = typer.Typer(help="Object storage for a project: the grant and its quota, and its objects (what its worker "
                       "reads and writes as env.storage): list, copy up and down, remove.",
                  no_args_is_help=True)

REMOTE = ":"
STDIO = "-"
CHUNK = 64 * 1024
PAGE = 1000  # the API's largest page: ls follows nextCursor to the end
BIG = 1024 * 1024  # a transfer this large shows a progress bar (on stderr)
TRANSFER_SECONDS = 300.0  # waiting for a large body's answer: the store may take a while to settle it

YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (scripts; --json needs it).")]


def _base(slug: str, proj: str) -> str:
    return f"{project_path(slug, proj)}/storage"


def _object_path(slug: str, proj: str, key: str) -> str:
    from urllib.parse import quote

    # Each segment escaped, the slashes kept: the route takes the key as the rest of the path.
    return f"{_base(slug, proj)}/objects/{quote(key, safe='/')}"


def size_text(n: Any) -> str:
    """1536 -> "1.5 KiB" (bytes below 1 KiB as they are)."""
    if not isinstance(n, int):
        return "-"
    value, unit = float(n), "bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


def _explain(exc: ApiError, proj: str) -> ApiError:
    """The server's error, with what to do next where its words alone leave a person stuck."""
    if exc.code == "not_granted" and exc.hint is None:
        exc.hint = f"run `svc storage grant --project {proj}` (members) first"
    elif exc.code == "storage_quota_exceeded" and exc.hint is None:
        exc.hint = (f"free room with `svc storage rm KEY --project {proj}`, or move the org to a larger plan "
                    "(`svc billing upgrade`)")
    return exc


@contextlib.contextmanager
def _told(proj: str) -> Iterator[None]:
    try:
        yield
    except ApiError as exc:
        raise _explain(exc, proj) from None


def _render_status(proj: str, data: dict[str, Any]) -> Callable[[Console], None]:
    def render(c: Console) -> None:
        quota, used = data.get("quotaBytes"), data.get("usedBytes")
        if data.get("granted"):
            c.print(f"{proj} has object storage (env.storage for its worker), under the prefix {data.get('prefix')}.",
                    soft_wrap=True)
        else:
            c.print(f"{proj} has no object storage: `svc storage grant` gives it (its worker gets env.storage on "
                    "its next request).", soft_wrap=True)
        share = f" ({100 * used / quota:.1f}%)" if isinstance(used, int) and isinstance(quota, int) and quota else ""
        c.print(f"Used: {size_text(used)} of {size_text(quota)}{share} (the org's plan).")
    return render


def _status(ctx: typer.Context, project: str | None, org: str | None, as_json: bool, method: str) -> None:
    """GET (what it is) or POST (grant) of the project's storage: the status either way."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.request(method, _base(slug, proj))
    output.emit(as_json, data, _render_status(proj, data))


@app.command("status")
def status(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Whether the project has storage, its prefix, the plan's quota and what it uses."""
    _status(ctx, project, org, as_json, "GET")


@app.command("grant")
def grant(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Give the project object storage (members): env.storage for its worker. Safe to run again."""
    _status(ctx, project, org, as_json, "POST")


@app.command("revoke")
def revoke(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, yes: YesOption = False,
           as_json: JsonFlag = False) -> None:
    """Take the project's storage away (admins): its worker loses env.storage; the objects are kept."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        output.confirm(yes, as_json, f"Take object storage from {proj}? Its worker loses env.storage (the objects "
                       "are kept).", "revoke", "Nothing was revoked")
        api.delete(_base(slug, proj))
    output.emit_line(as_json, {"project": proj, "granted": False},
                     f"{proj} no longer has object storage (its objects are kept; a grant gives them back).")


def _key(arg: str) -> str:
    """A key as typed for ls and rm: the `:` that marks a remote side in cp is allowed."""
    return arg[len(REMOTE):] if arg.startswith(REMOTE) else arg


@app.command("ls")
def ls(ctx: typer.Context,
       prefix: Annotated[str, typer.Argument(metavar="[PREFIX]", help="Only keys starting with it (a folder: "
                                                                     "`img/`).")] = "",
       recursive: Annotated[bool, typer.Option("--recursive", "-r", help="Every key under PREFIX, not folders by "
                                                                         "\"/\".")] = False,
       page_size: Annotated[int, typer.Option("--page-size", min=1, max=PAGE, hidden=True,
                                              help="Keys asked for at a time.")] = PAGE,
       project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """The project's objects under PREFIX (viewers): folders by "/" and objects, or every key with -r."""
    wanted = _key(prefix)
    objects: list[dict[str, Any]] = []
    prefixes: list[str] = []
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        params: dict[str, Any] = {"prefix": wanted, "limit": page_size} | ({} if recursive else {"delimiter": "/"})
        cursor: str | None = None
        with _told(proj):
            while True:
                page = api.get(f"{_base(slug, proj)}/objects", params=params | ({"cursor": cursor} if cursor else {}))
                objects += page.get("objects") or []
                prefixes += page.get("prefixes") or []
                cursor = page.get("nextCursor")
                if not cursor:
                    break
    data = {"objects": objects, "prefixes": prefixes}

    def render(c: Console) -> None:
        rows: list[list[Any]] = [["", "folder", p] for p in prefixes]
        rows += [[output.when(o.get("uploadedAt")), size_text(o.get("size")), o.get("key")] for o in objects]
        where = f" under {wanted}" if wanted else ""
        c.print(output.table(["UPLOADED", "SIZE", "KEY"], rows, shrink={"KEY": 12},
                             empty=f"No objects in {proj}'s storage{where}."))
        if objects:
            total = sum(o.get("size") or 0 for o in objects)
            c.print(f"{len(objects)} object{'s' if len(objects) != 1 else ''}, {size_text(total)}"
                    + (f"; {len(prefixes)} folder{'s' if len(prefixes) != 1 else ''}" if prefixes else "") + ".",
                    style="dim")

    output.emit(as_json, data, render)


def _progress(size: int, verb: str) -> contextlib.AbstractContextManager[Progress | None]:
    """A progress bar in bytes on stderr for a big transfer; nothing for a small one."""
    if size < BIG:
        return contextlib.nullcontext()
    return output.transfer_bar(verb)


def _advancer(bar: Progress | None, size: int) -> Callable[[int], None]:
    """What moves the bar by n bytes (nothing without one)."""
    if bar is None:
        return lambda n: None
    task = bar.add_task("transfer", total=size)
    return lambda n: bar.advance(task, n)


def _chunks(f: IO[bytes], size: int, advance: Callable[[int], None]) -> Iterator[bytes]:
    """The file's first `size` bytes, its length as sent: a file that grows meanwhile is cut there
    (one that shrinks sends less, which the server refuses: nothing stored)."""
    left = size
    while left > 0 and (chunk := f.read(min(CHUNK, left))):
        left -= len(chunk)
        advance(len(chunk))
        yield chunk


@contextlib.contextmanager
def _source(src: str) -> Iterator[tuple[IO[bytes], int, str]]:
    """(the open file, its size, its name) of an upload; standard input copied to a temporary file
    first (on disk, never whole in memory), as the upload says its length before its body."""
    if src == STDIO:
        with tempfile.TemporaryFile() as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool, CHUNK)
            size = spool.tell()
            spool.seek(0)
            yield spool, size, ""
        return
    path = Path(src)
    if not path.is_file():
        raise CliError(f"{src}: no such file" if not path.exists() else f"{src} is not a file (copy files one at a "
                       "time)", "bad_request")
    with path.open("rb") as f:
        yield f, os.fstat(f.fileno()).st_size, path.name


def _headers(api: Api, extra: dict[str, str]) -> dict[str, str]:
    if not api.token:
        raise api.not_signed_in()
    return {"user-agent": USER_AGENT, "accept": "application/json", "authorization": f"Bearer {api.token}", **extra}


def _upload(api: Api, slug: str, proj: str, src: str, key: str, content_type: str | None) -> dict[str, Any]:
    with _source(src) as (f, size, name):
        if not key or key.endswith("/"):
            if not name:
                raise CliError("Name the key to write standard input to (`:folder/name`)", "bad_request")
            key += name
        kind = content_type or (mimetypes.guess_type(name)[0] if name else None) or "application/octet-stream"
        headers = _headers(api, {"content-type": kind, "content-length": str(size)})
        with _progress(size, "Uploading") as bar:
            try:
                body = _chunks(f, size, _advancer(bar, size))
                r = api.http.request("PUT", _object_path(slug, proj, key), content=body, headers=headers,
                                     read_seconds=TRANSFER_SECONDS)
            except transport.ConnectFailed as exc:
                raise unreachable(exc, api.base_url, api.origin) from None
            except transport.TransportError as exc:
                raise CliError(f"The upload did not complete: {str(exc) or type(exc).__name__}", "upload_failed",
                               hint="nothing was stored under that key; try again") from None
    with _told(proj):
        result: dict[str, Any] = decode(r, api.base_url, api.origin)
    return result


def _download(api: Api, slug: str, proj: str, key: str, dst: str) -> dict[str, Any]:
    """Write the object to dst (a file, a folder to put it in by its key's last part, or `-`)."""
    target_path: Path | None = None
    if dst != STDIO:
        target_path = Path(dst)
        if target_path.is_dir() or dst.endswith(("/", os.sep)):
            name = key.rstrip("/").rsplit("/", 1)[-1]
            if not name:
                raise CliError(f"{key!r} has no name to give the file: name it", "bad_request")
            target_path = target_path / name
    try:
        with api.http.stream("GET", _object_path(slug, proj, key), headers=_headers(api, {}),
                             read_seconds=TRANSFER_SECONDS) as answer:
            if not answer.is_success:
                with _told(proj):
                    decode(answer.whole(), api.base_url, api.origin)  # raises the API's error
            length = answer.headers.get("content-length")
            size = int(length) if length and length.isdigit() else None  # None: sent chunked, its end is its end
            written = _write(answer, size, target_path)
    except transport.ConnectFailed as exc:
        raise unreachable(exc, api.base_url, api.origin) from None
    except transport.TransportError as exc:
        raise CliError(f"The download did not complete: {str(exc) or type(exc).__name__}", "download_failed",
                       hint="nothing was written; try again") from None
    if size is not None and written != size:
        raise CliError(f"The download ended after {written} of {size} bytes", "download_failed",
                       hint="nothing was written; try again")
    return {"key": key, "file": str(target_path) if target_path else STDIO, "size": written,
            "contentType": answer.headers.get("content-type"), "etag": answer.headers.get("etag")}


def _write(answer: transport.Streamed, size: int | None, path: Path | None) -> int:
    """The body as it arrives: to stdout, or to a temporary file beside `path` renamed onto it once
    whole (a failed download leaves what was there)."""
    written = 0
    with _progress(size or 0, "Downloading") as bar:
        advance = _advancer(bar, size or 0)
        if path is None:
            sys.stdout.flush()
            for chunk in answer.chunks(CHUNK):
                sys.stdout.buffer.write(chunk)
                written += len(chunk)
                advance(len(chunk))
            sys.stdout.buffer.flush()
            return written
        folder = path.parent
        if not folder.is_dir():
            raise CliError(f"{folder}: no such folder", "bad_request")
        fd, part = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in answer.chunks(CHUNK):
                    out.write(chunk)
                    written += len(chunk)
                    advance(len(chunk))
            if size is None or written == size:
                os.replace(part, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)
    return written


@app.command("cp")
def cp(ctx: typer.Context,
       src: Annotated[str, typer.Argument(metavar="SRC", help="A local file, `-` (standard input), or `:KEY`.")],
       dst: Annotated[str, typer.Argument(metavar="DST", help="`:KEY` (ending in / keeps the file's name), or a "
                                                              "local file or folder, or `-` (standard output).")],
       content_type: Annotated[str | None, typer.Option("--content-type", metavar="TYPE", help="The object's "
                               "Content-Type (default: guessed from the file's name).")] = None,
       project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Copy a file up (`cp FILE :KEY`, members) or an object down (`cp :KEY FILE`, viewers)."""
    up, down = dst.startswith(REMOTE), src.startswith(REMOTE)
    if up == down:
        raise CliError("One side of cp is the project's storage, written `:KEY`, the other a local file or `-`"
                       if up else "Name the side in the project's storage with a leading `:` (`:img/a.png`)",
                       "bad_request", hint="svc storage cp ./a.png :img/a.png uploads; "
                                           "svc storage cp :img/a.png ./a.png downloads")
    if down and content_type:
        raise CliError("--content-type is for uploads: a download keeps the object's", "bad_request")
    if down and dst == STDIO and as_json:
        raise CliError("--json prints where the object went: give a file, not `-`", "bad_request")
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        if up:
            info = _upload(api, slug, proj, src, dst[len(REMOTE):], content_type)
            output.emit_line(as_json, info, f"Uploaded {size_text(info.get('size'))} to ",
                             (f":{info.get('key')}", "bold"), f" in {proj}.")
            return
        got = _download(api, slug, proj, src[len(REMOTE):], dst)
    if dst == STDIO:
        return
    output.emit_line(as_json, got, f"Wrote {size_text(got['size'])} of :{got['key']} to ", (got["file"], "bold"), ".")


@app.command("rm")
def rm(ctx: typer.Context,
       key: Annotated[str, typer.Argument(metavar="KEY", help="The object's key (`:KEY` too).")],
       project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Delete an object (members). Deleting a key that holds nothing is not an error."""
    name = _key(key)
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        with _told(proj):
            api.delete(_object_path(slug, proj, name))
    output.emit_line(as_json, {"key": name, "deleted": True}, "Deleted ", (f":{name}", "bold"), f" from {proj}.")
