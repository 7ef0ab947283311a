"""Packing a folder into a deployment bundle, and reading its git provenance (client side).

A bundle is a gzipped tar with `svc.json` at the root, plus `assets/` (served as the site) and
`worker/` (optional). What `svc deploy DIR` packs:

- `DIR/svc.json` (a JSON object) at the root; when DIR has none, `svc deploy --project NAME` packs
  an empty one (`{}`) instead, which the server requires (nothing is written into DIR);
- when DIR has an `assets/` or a `worker/` directory: those two, as they are (nothing else);
- otherwise DIR's other files under `assets/`, so a plain static folder deploys as it is.

Everywhere, `.git`, `node_modules`, `.svc` and other dot-files/dot-directories are skipped, except
`.well-known`. Symbolic links inside DIR are packed as the file they point to; links to directories
or to anything outside DIR are skipped (a link to `~/.ssh/id_rsa` is never published), and so are
sockets, FIFOs and devices. Entries are sorted and carry no owner names, so the same tree packs to
the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from svc.cli.client import CliError

MANIFEST = "svc.json"
MAX_MANIFEST_BYTES = 64 * 1024  # the server refuses a larger svc.json
SKIP_NAMES = frozenset({".git", "node_modules", ".svc"})
KEEP_DOT_NAMES = frozenset({".well-known"})
GIT_MESSAGE_CHARS = 200
CHUNK = 64 * 1024


def read_manifest(directory: Path) -> dict[str, Any]:
    """DIR/svc.json as a dict; a clear error when it is missing, unreadable or not a JSON object."""
    path = directory / MANIFEST
    if not path.is_file():
        raise CliError(f"{directory} has no {MANIFEST}; a bundle needs one at its root", "no_manifest",
                       hint=f'create {path} (at least "{{}}"; "project" names the project to deploy to)')
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise CliError(f"Cannot read {path}: {exc.strerror}", "bad_manifest") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise CliError(f"{path} is over {MAX_MANIFEST_BYTES} bytes", "bad_manifest")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CliError(f"{path} is not valid JSON: {exc}", "bad_manifest") from None
    if not isinstance(data, dict):
        raise CliError(f"{path} must hold a JSON object", "bad_manifest")
    for key in ("project", "org"):
        if key in data and not (isinstance(data[key], str) and data[key]):
            raise CliError(f'"{key}" in {path} must be a non-empty string', "bad_manifest")
    return data


def _skipped(name: str) -> bool:
    if name in SKIP_NAMES:
        return True
    return name.startswith(".") and name not in KEEP_DOT_NAMES


@dataclass
class Packed:
    files: int = 0
    unpacked_bytes: int = 0
    size: int = 0
    layout: str = "assets"  # "assets": assets/ and/or worker/ as they are; "folder": DIR's files under assets/
    skipped: list[str] = field(default_factory=list)
    manifest_added: bool = False  # DIR had no svc.json: the bundle got the one given to pack()


class OverBound(Exception):
    """The compressed bundle grew over `max_bytes` while packing: no point in packing the rest."""

    def __init__(self, files: int, size: int) -> None:
        super().__init__(f"{size} bytes after {files} files")
        self.files = files
        self.size = size


class _Packer:
    def __init__(self, root: Path, tar: tarfile.TarFile, result: Packed, *, out: IO[bytes] | None = None,
                 start: int = 0, max_bytes: int | None = None) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.tar = tar
        self.result = result
        self.out = out
        self.start = start
        self.max_bytes = max_bytes

    def check_size(self) -> None:
        if self.out is not None and self.max_bytes is not None and self.out.tell() - self.start > self.max_bytes:
            raise OverBound(self.result.files, self.out.tell() - self.start)

    def add_bytes(self, arcname: str, data: bytes, mtime: int) -> None:
        info = self._info(arcname, tarfile.REGTYPE, 0o644, mtime)
        info.size = len(data)
        self.tar.addfile(info, io.BytesIO(data))
        self.result.files += 1
        self.result.unpacked_bytes += len(data)

    def add_dir(self, arcname: str, mtime: int) -> None:
        self.tar.addfile(self._info(arcname, tarfile.DIRTYPE, 0o755, mtime))

    def add_tree(self, source: Path, prefix: str, *, exclude: frozenset[str] = frozenset()) -> None:
        """Everything under `source` (a directory) as `prefix/...`, sorted, with the skip rules."""
        try:
            names = sorted(os.listdir(source))
        except OSError as exc:
            raise CliError(f"Cannot read {source}: {exc.strerror}", "unreadable") from None
        for name in names:
            if name in exclude or _skipped(name):
                continue
            self._add(source / name, f"{prefix}/{name}")

    def _add(self, path: Path, arcname: str) -> None:
        shown = str(path.relative_to(self.root))
        try:
            st = path.lstat()
        except OSError as exc:
            raise CliError(f"Cannot read {path}: {exc.strerror}", "unreadable") from None
        if stat.S_ISLNK(st.st_mode):
            try:
                target = path.resolve()
            except (OSError, RuntimeError):  # a loop of links
                self.result.skipped.append(f"{shown} (a link that does not resolve)")
                return
            if not target.is_relative_to(self.real_root):
                self.result.skipped.append(f"{shown} (a link to outside the folder)")
                return
            if not target.is_file():
                self.result.skipped.append(f"{shown} (a link to something that is not a file)")
                return
            st = target.stat()
        if stat.S_ISDIR(st.st_mode):
            self.add_dir(arcname, int(st.st_mtime))
            self.add_tree(path, arcname)
        elif stat.S_ISREG(st.st_mode):
            mode = 0o755 if st.st_mode & 0o111 else 0o644
            info = self._info(arcname, tarfile.REGTYPE, mode, int(st.st_mtime))
            try:
                with path.open("rb") as f:
                    info.size = os.fstat(f.fileno()).st_size
                    self.tar.addfile(info, f)
            except OSError as exc:
                raise CliError(f"Cannot read {path}: {exc.strerror}", "unreadable") from None
            self.result.files += 1
            self.result.unpacked_bytes += info.size
            self.check_size()
        else:
            self.result.skipped.append(f"{shown} (not a regular file)")

    @staticmethod
    def _info(arcname: str, kind: bytes, mode: int, mtime: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(arcname)
        info.type = kind
        info.mode = mode
        info.mtime = max(mtime, 0)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info


def pack(directory: Path, out: IO[bytes], manifest: dict[str, Any] | None = None, *,
         max_bytes: int | None = None) -> Packed:
    """Write the bundle of `directory` to `out` (a binary file); returns what went in.

    Without `manifest`, DIR/svc.json must exist (read_manifest). With one, a DIR without svc.json
    gets `manifest` as its svc.json in the bundle (`{}` for `svc deploy --project`). Over
    `max_bytes` of compressed output, packing stops with OverBound."""
    manifest = read_manifest(directory) if manifest is None else manifest
    result = Packed()
    manifest_path = directory / MANIFEST
    if manifest_path.is_file():
        try:
            manifest_bytes = manifest_path.read_bytes()
            manifest_mtime = int(manifest_path.stat().st_mtime)
        except OSError as exc:
            raise CliError(f"Cannot read {manifest_path}: {exc.strerror}", "unreadable") from None
    else:
        manifest_bytes = json.dumps(manifest, separators=(",", ":")).encode("utf-8")
        manifest_mtime = 0  # no file, no time: the same tree still packs to the same bytes
        result.manifest_added = True
    start = out.tell()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        packer = _Packer(directory, tar, result, out=out, start=start, max_bytes=max_bytes)
        packer.add_bytes(MANIFEST, manifest_bytes, manifest_mtime)
        parts = [name for name in ("assets", "worker") if (directory / name).is_dir()]
        if parts:
            for name in parts:
                packer.add_dir(name, int((directory / name).stat().st_mtime))
                packer.add_tree(directory / name, name)
        else:
            result.layout = "folder"
            packer.add_dir("assets", int(directory.stat().st_mtime))
            packer.add_tree(directory, "assets", exclude=frozenset({MANIFEST}))
    result.size = out.tell() - start
    return result


def read_chunks(f: IO[bytes], *, on_chunk: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """The file from its start, in chunks (an upload body that is never held whole in memory)."""
    f.seek(0)
    while chunk := f.read(CHUNK):
        if on_chunk is not None:
            on_chunk(len(chunk))
        yield chunk


@dataclass(frozen=True)
class GitInfo:
    commit: str
    message: str
    branch: str | None
    dirty: bool
    # The repository's top folder (the deployed folder, or one it lies in).
    root: Path | None = None

    def headers(self) -> dict[str, str]:
        """The X-Svc-Git-* headers (display only on the server; never used for authorization)."""
        headers = {"X-Svc-Git-Commit": self.commit,
                   "X-Svc-Git-Message": quote(self.message[:GIT_MESSAGE_CHARS], safe=""),
                   "X-Svc-Git-Dirty": "true" if self.dirty else "false"}
        if self.branch:
            headers["X-Svc-Git-Branch"] = quote(self.branch, safe="")
        return headers

    def as_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "message": self.message, "branch": self.branch, "dirty": self.dirty}


def _git(directory: Path, *args: str) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, timeout=20, check=False,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return p.stdout.decode("utf-8", errors="replace")


def git_info(directory: Path) -> GitInfo | None:
    """The working tree's HEAD commit, its subject line, the branch and whether anything changed;
    None outside a git repository, in one without commits, or without git installed."""
    if (_git(directory, "rev-parse", "--is-inside-work-tree") or "").strip() != "true":
        return None
    commit = (_git(directory, "rev-parse", "HEAD") or "").strip()
    if not commit or not all(c in "0123456789abcdef" for c in commit):
        return None
    message = (_git(directory, "log", "-1", "--format=%s") or "").strip()
    branch = (_git(directory, "rev-parse", "--abbrev-ref", "HEAD") or "").strip()
    status = _git(directory, "status", "--porcelain")
    top = (_git(directory, "rev-parse", "--show-toplevel") or "").strip()
    return GitInfo(commit=commit, message=message, branch=branch if branch and branch != "HEAD" else None,
                   dirty=bool(status and status.strip()), root=Path(top) if top else None)
