"""The read side of a local git node: refs, trees, blobs, history and the deploy bundle of a bare
repository on this machine's disk, read with the git CLI (docs/repos.md).

Why the CLI, by measurement: a packed repository, `tree` of a 1,000-entry directory and `commits`
of 200 (a fresh open per call, as per request), 50 runs after 5 warm-ups per round, 3 rounds, on a
shared 2-core machine busy with other test runs (load 4-5), so the ranges are wide:

                      tree p50    tree p99    commits p50  commits p99  CPU per call (tree, commits)
    git 2.39 CLI      24-33 ms    87-219 ms   21-25 ms     31-47 ms     19-20 ms, 16-17 ms
    dulwich 1.2.21    43-59 ms    87-136 ms   31-54 ms     53-123 ms    36-46 ms, 31-47 ms

A git process costs about 4 ms to start (`tree` runs two, rev-parse and ls-tree; parsing 1,000
entries takes 1 ms); dulwich (with its C extensions) works in Python, on the event loop's thread
unless given a thread pool, for twice the CPU. The wall times are the machine's load more than
git's (at load 7-8 both doubled, the CLI still ahead): p99 under 100 ms held for commits, and for
tree in one round of three. The CPU column is the figure to trust; an idle machine should bring
tree to its ~20 ms. pygit2 was not measured (not installed). The CLI also serves pushes and fetches
already (`git http-backend`, SSH): no second reader of the object format to keep in step.

Every call runs `git --git-dir <repo> ...` through runner.py (no shell; an environment built from
nothing, its own process group, a timeout: READ_SECONDS, ARCHIVE_SECONDS), with no HOME and
replace refs ignored (a pusher could push refs/replace/* and make the browser and the bundle show
objects other than the ids say).
What git prints is read in bounded pieces: a tree stops at TREE_LIMIT entries, a blob over
BLOB_LIMIT is never read, an archive stops at its limit."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, suppress
from pathlib import Path
from typing import Literal

from svc.adapters.git import runner
from svc.adapters.git.port import (
    BLOB_LIMIT,
    COMMITS_LIMIT,
    TREE_LIMIT,
    ArchiveTooLarge,
    Blob,
    Commit,
    NoPath,
    NoRef,
    Ref,
    Tree,
    TreeEntry,
)

ARCHIVE_LIMIT = 256 * 1024 * 1024  # bytes of tar.gz: a deployment bundle larger than this is refused
BINARY_SNIFF = 8000  # bytes looked at for a NUL, as git's own binary detection does
_RECORD_CAP = 64 * 1024  # a NUL-terminated record longer than this is cut (names, message bodies)

# Characters and sequences of revision syntax that are not part of a ref name (git check-ref-format):
# "main~1", "main^{tree}", ":/regex" (a search over every commit message) or "@{-1}" are refused.
_NOT_A_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{")
# A full object id (SHA-1 or SHA-256): a commit a push just made needs no resolving.
_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


# What the reads add to git's environment (runner.py).
_READ_ENV = {
    "GIT_NO_REPLACE_OBJECTS": "1",  # replace refs ignored (see above)
    "GIT_LITERAL_PATHSPECS": "1",  # a path is a path: "*" or ":(glob)" are no patterns
    "GIT_OPTIONAL_LOCKS": "0",  # reads take no lock a concurrent push could trip over
}
READ_SECONDS = 30.0  # a read of refs, a tree, a blob or history: milliseconds, seconds at worst
ARCHIVE_SECONDS = 120.0  # a deploy bundle: up to ARCHIVE_LIMIT of tar.gz to compress


def _env() -> dict[str, str]:
    return runner.environment(extra=_READ_ENV)


def _git(repo: Path, *args: str, seconds: float = READ_SECONDS) -> AbstractAsyncContextManager[runner.Git]:
    return runner.running(["git", "--git-dir", str(repo), *args], _env(), seconds=seconds)


async def _output(repo: Path, *args: str, limit: int, ok: tuple[int, ...] = (0,),
                  seconds: float = READ_SECONDS) -> tuple[int, bytes]:
    """The exit code (one of `ok`, else GitUnreachable) and stdout; more than `limit` bytes of
    stdout raises OverflowError, the rest unread."""
    return await runner.output(["git", "--git-dir", str(repo), *args], _env(), seconds=seconds, limit=limit, ok=ok)


async def _records(stream: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The NUL-terminated records of `-z` output, each cut to _RECORD_CAP bytes, read as they come:
    memory stays bounded whatever git prints, and the caller may stop early."""
    pending = b""
    dropping = False  # the record in progress was already yielded, cut: skip to its end
    while chunk := await stream.read(65536):
        pending += chunk
        start = 0
        while (end := pending.find(b"\0", start)) >= 0:
            if not dropping:
                yield pending[start:min(end, start + _RECORD_CAP)]
            dropping = False
            start = end + 1
        pending = pending[start:]
        if len(pending) > _RECORD_CAP:
            if not dropping:
                yield pending[:_RECORD_CAP]
            dropping, pending = True, b""
    if pending and not dropping:
        yield pending


def _exists(repo: Path) -> bool:
    # The repository is made on first access: a missing (or still empty) directory is a repository
    # with nothing in it, not a failure.
    return (repo / "HEAD").is_file()


def _clean_path(path: str) -> str:
    """"" for the root; raises NoPath for a path that could mean anything but one entry of the tree."""
    clean = path.strip("/")
    if clean and ("\0" in clean or "\\" in clean or any(s in ("", ".", "..") for s in clean.split("/"))):
        raise NoPath(path)
    return clean


async def ref_count(repo: Path) -> int:
    """Every ref of the repository, whatever its namespace (HEAD, a symbolic ref, is not one)."""
    if not _exists(repo):
        return 0
    _, out = await _output(repo, "for-each-ref", "--format=.", limit=64 << 20)
    return out.count(b"\n")


async def refs(repo: Path) -> list[Ref]:
    """Branches and tags by name; an annotated tag is peeled to its commit, tags of trees or blobs
    are left out (nothing to browse or deploy)."""
    if not _exists(repo):
        return []
    # Ref names hold no spaces or newlines (check-ref-format), so plain lines are safe here.
    fmt = "%(objectname) %(objecttype) %(*objectname) %(*objecttype) %(refname)"
    _, out = await _output(repo, "for-each-ref", f"--format={fmt}", "refs/heads", "refs/tags", limit=64 << 20)
    found: list[Ref] = []
    nested: list[str] = []  # a tag of a tag: %(*...) peels one level only
    for line in out.decode(errors="replace").splitlines():
        oid, kind, peeled, peeled_kind, name = line.split(" ", 4)
        if kind == "commit":
            found.append(Ref(name, oid))
        elif peeled_kind == "commit":
            found.append(Ref(name, peeled))
        elif peeled_kind == "tag":
            nested.append(name)
    for name in nested:
        with suppress(NoRef):
            found.append(Ref(name, await resolve(repo, name)))
    return sorted(found, key=lambda r: r.name)


async def resolve(repo: Path, ref: str) -> str:
    """A branch ("main"), full ref ("refs/heads/main"), tag or commit id (7-40 hex) -> the commit
    id; git's own precedence decides between a tag and a branch of one name. Raises NoRef."""
    if not ref or ref.startswith("-") or _NOT_A_REF.search(ref) or not _exists(repo):
        raise NoRef(ref)
    code, out = await _output(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
                              limit=4096, ok=(0, 1))
    if code != 0:  # 1: --verify --quiet's "no such commit"
        raise NoRef(ref)
    return out.decode().strip()


async def _entry(repo: Path, commit: str, path: str, *,
                 unresolved: bool = False) -> tuple[str, str, int | None] | None:
    """(type, object id, size) of the entry at `path` (not the root), None when there is none.
    `unresolved`: `commit` was not resolved first, so git's refusal of it (exit 128) is NoRef."""
    code, out = await _output(repo, "ls-tree", "-l", "-z", commit, "--", path, limit=1 << 20,
                              ok=(0, 128) if unresolved else (0,))
    if code == 128:
        raise NoRef(commit)
    for record in out.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if name == os.fsencode(path):
            _, kind, oid, size = meta.decode().split()
            return kind, oid, None if size == "-" else int(size)
    return None


async def tree(repo: Path, ref: str, path: str) -> Tree:
    """The directory at `path` in git's order (by name, a tree named as if it ended in "/"): kept
    because git lists as it goes, so the listing stops at TREE_LIMIT without reading the rest; a
    trees-first order would need every entry first. Submodules (mode 160000, "commit" entries) are
    left out: their commits are in another repository, a link to them could only be a 404."""
    commit = await resolve(repo, ref)
    clean = _clean_path(path)
    # "dir/" lists the directory's entries (full paths), and nothing when "dir" is a file, a
    # submodule or missing: one process, no second look-up. Git keeps no empty directory, so
    # nothing means NoPath (a tree object made empty by hand is the one, harmless, exception).
    prefix = os.fsencode(f"{clean}/") if clean else b""
    entries: list[TreeEntry] = []
    listed = False
    async with _git(repo, "ls-tree", "-l", "-z", commit, *(["--", f"{clean}/"] if clean else [])) as run:
        async for record in _records(run.stdout):
            meta, _, raw = record.partition(b"\t")
            _, kind, _, size = meta.decode().split()
            listed = listed or raw.startswith(prefix)  # not "sub/" listing the submodule "sub" itself
            if kind not in ("blob", "tree") or not raw.startswith(prefix):
                continue
            if len(entries) == TREE_LIMIT:
                return Tree(entries, truncated=True)  # leaving the block ends the process
            # A name that is not UTF-8 shows with replacement characters (and is a 404 if followed).
            name = raw[len(prefix):].decode(errors="replace")
            entry_type: Literal["blob", "tree"] = "blob" if kind == "blob" else "tree"
            entries.append(TreeEntry(name, f"{clean}/{name}" if clean else name, entry_type,
                                     int(size) if kind == "blob" else None))
        if await run.wait() != 0:
            raise await run.failure()
    if clean and not listed:
        raise NoPath(path)
    return Tree(entries, truncated=False)


async def blob(repo: Path, ref: str, path: str) -> Blob:
    """A file's text; a binary or too large file comes without content. The size is the one
    `ls-tree -l` gives with the entry (what `cat-file -s` would say, one process fewer)."""
    commit = await resolve(repo, ref)
    clean = _clean_path(path)
    found = await _entry(repo, commit, clean) if clean else None
    if found is None or found[0] != "blob":
        raise NoPath(path)
    _, oid, known = found
    size = known or 0  # a blob's size is always listed
    if size > BLOB_LIMIT:
        return Blob(clean, size, binary=False, too_large=True, content=None)
    try:
        _, data = await _output(repo, "cat-file", "blob", oid, limit=BLOB_LIMIT)
    except OverflowError:  # cannot be (ls-tree sized this very object), but the read stays bounded
        return Blob(clean, size, binary=False, too_large=True, content=None)
    if b"\0" in data[:BINARY_SNIFF]:
        return Blob(clean, size, binary=True, too_large=False, content=None)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Blob(clean, size, binary=True, too_large=False, content=None)
    return Blob(clean, size, binary=False, too_large=False, content=text)


async def commits(repo: Path, ref: str, limit: int = COMMITS_LIMIT) -> list[Commit]:
    """The history from `ref`, newest first, at most `limit` (clamped to 1..COMMITS_LIMIT)."""
    commit = await resolve(repo, ref)
    count = max(1, min(limit, COMMITS_LIMIT))
    # NUL between fields and after each commit (-z): a message may hold anything but NUL, which git
    # itself stops a message at. The whole message (%B) rather than %s, which joins the lines of
    # the first paragraph; a body is cut at _RECORD_CAP bytes as it is read.
    fields: list[str] = []
    async with _git(repo, "log", "-z", f"-n{count}", "--format=%H%x00%an <%ae>%x00%aI%x00%B", commit, "--") as run:
        async for record in _records(run.stdout):
            fields.append(record.decode(errors="replace"))
        if await run.wait() != 0:
            raise await run.failure()
    return [Commit(id=fields[i], author=fields[i + 1], at=fields[i + 2],
                   message=fields[i + 3].strip().split("\n", 1)[0].strip())
            for i in range(0, len(fields) - 3, 4)]


async def has_path(repo: Path, commit: str, path: str) -> bool:
    """Whether `path` (a file or a directory) is in the commit's tree; a malformed path is not. A
    full commit id (what a push hands its hooks) is read as it is: one git process, not two."""
    try:
        clean = _clean_path(path)
    except NoPath:
        clean = None
    if clean and _FULL_ID.fullmatch(commit) and _exists(repo):
        return await _entry(repo, commit, clean, unresolved=True) is not None
    resolved = await resolve(repo, commit)
    return clean is not None and (not clean or await _entry(repo, resolved, clean) is not None)


async def archive(repo: Path, commit: str, limit: int = ARCHIVE_LIMIT) -> bytes:
    """The commit's whole tree as a tar.gz, its files at the top (no leading directory): the deploy
    bundle. The tree's .gitattributes apply (export-ignore leaves files out). Raises
    ArchiveTooLarge past `limit` bytes, having read no more than that."""
    resolved = await resolve(repo, commit)
    try:
        _, data = await _output(repo, "archive", "--format=tar.gz", resolved, limit=limit, seconds=ARCHIVE_SECONDS)
    except OverflowError as e:
        raise ArchiveTooLarge(f"the archive of {resolved} is larger than {limit} bytes") from e
    return data
