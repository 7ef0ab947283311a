"""adapters/git/reading.py: the read side of a local git node, on real repositories made with git."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from svc.adapters.git import reading
from svc.adapters.git.port import (
    BLOB_LIMIT,
    COMMITS_LIMIT,
    TREE_LIMIT,
    ArchiveTooLarge,
    Blob,
    Commit,
    GitUnreachable,
    NoPath,
    NoRef,
    Ref,
    Tree,
    TreeEntry,
)

ENV = {
    "PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com",
}
BIG = b"a" * (BLOB_LIMIT + 1)


def git(*args: str, cwd: Path | None = None, stdin: bytes | None = None, at: int | None = None) -> str:
    env = dict(ENV)
    if at is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{at} +0200"
    done = subprocess.run(["git", *args], cwd=cwd, input=stdin, env=env, capture_output=True, check=True)
    return done.stdout.decode().strip()


@dataclass(frozen=True)
class Repo:
    path: Path
    first: str  # the commit v1 tags
    second: str  # main


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """A bare repository a work tree pushed two commits, a branch and an annotated tag to."""
    root = tmp_path_factory.mktemp("git")
    bare, work = root / "project.git", root / "work"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    git("init", "-q", "-b", "main", str(work))
    (work / "src" / "lib").mkdir(parents=True)
    (work / "svc.json").write_text('{"name": "app"}\n')
    (work / "README.md").write_text("hello, wörld\n")
    (work / "src" / "app.py").write_text("print('hi')\n")
    (work / "src" / "lib" / "util.py").write_text("X = 1\n")
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "first\n\nthe body", cwd=work, at=1_700_000_000)
    first = git("rev-parse", "HEAD", cwd=work)
    git("tag", "-a", "v1", "-m", "version 1", cwd=work)
    (work / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (work / "latin1.txt").write_bytes(b"caf\xe9\n")
    (work / "big.txt").write_bytes(BIG)
    git("add", ".", cwd=work)
    # A submodule entry (a commit of another repository), without .gitmodules: git lists it all the same.
    git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub", cwd=work)
    git("commit", "-q", "-m", "second: one line\nstill the first paragraph\n\nbody", cwd=work, at=1_700_000_100)
    second = git("rev-parse", "HEAD", cwd=work)
    git("push", "-q", str(bare), "main", "v1", cwd=work)
    return Repo(bare, first, second)


def fast_import(bare: Path, stream: str) -> None:
    git("init", "-q", "--bare", "-b", "main", str(bare))
    git("--git-dir", str(bare), "fast-import", "--quiet", stdin=stream.encode())


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One commit whose root holds TREE_LIMIT + 1 files (one blob, many names: mktree, no work tree)."""
    bare = tmp_path_factory.mktemp("wide") / "wide.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    blob = git("--git-dir", str(bare), "hash-object", "-w", "--stdin", stdin=b"x\n")
    listing = "".join(f"100644 blob {blob}\tf{i:04}\n" for i in range(TREE_LIMIT + 1))
    tree = git("--git-dir", str(bare), "mktree", stdin=listing.encode())
    commit = git("--git-dir", str(bare), "commit-tree", tree, "-m", "wide")
    git("--git-dir", str(bare), "update-ref", "refs/heads/main", commit)
    return bare


@pytest.fixture(scope="module")
def long(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """COMMITS_LIMIT + 5 commits on main (fast-import), the last with an awkward message."""
    messages = [f"commit {i}\n" for i in range(COMMITS_LIMIT + 4)] + ["tab\there \x01 ünï \n\nmore\n"]
    messages[COMMITS_LIMIT] = "a long one\n\n" + "x" * 100_000 + "\n"  # longer than a record read whole
    stream = "".join(
        f"commit refs/heads/main\nauthor A <a@x> {1_600_000_000 + i} +0000\n"
        f"committer A <a@x> {1_600_000_000 + i} +0000\ndata {len(m.encode())}\n{m}\n"
        for i, m in enumerate(messages))
    bare = tmp_path_factory.mktemp("long") / "long.git"
    fast_import(bare, stream)
    return bare


async def test_refs_are_branches_and_tags_peeled_to_their_commit(repo: Repo) -> None:
    assert await reading.refs(repo.path) == [
        Ref("refs/heads/main", repo.second), Ref("refs/tags/v1", repo.first)]


async def test_a_tag_of_a_tag_is_peeled_and_a_tag_of_a_tree_left_out(tmp_path: Path) -> None:
    bare = tmp_path / "tags.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    tree = git("--git-dir", str(bare), "mktree", stdin=b"")
    commit = git("--git-dir", str(bare), "commit-tree", tree, "-m", "empty")
    git("--git-dir", str(bare), "update-ref", "refs/heads/main", commit)
    git("--git-dir", str(bare), "tag", "-a", "-m", "v1", "v1", commit)
    git("--git-dir", str(bare), "tag", "-a", "-m", "again", "v1-again", "v1")
    git("--git-dir", str(bare), "tag", "-a", "-m", "a tree", "of-a-tree", tree)
    git("--git-dir", str(bare), "tag", "light", commit)
    assert await reading.refs(bare) == [Ref("refs/heads/main", commit), Ref("refs/tags/light", commit),
                                        Ref("refs/tags/v1", commit), Ref("refs/tags/v1-again", commit)]
    assert await reading.tree(bare, "v1-again", "") == Tree([], truncated=False)
    with pytest.raises(NoRef):
        await reading.resolve(bare, "of-a-tree")


async def test_a_repository_not_made_yet_has_no_refs(tmp_path: Path) -> None:
    assert await reading.refs(tmp_path / "missing.git") == []
    (tmp_path / "empty.git").mkdir()
    assert await reading.refs(tmp_path / "empty.git") == []
    git("init", "-q", "--bare", str(tmp_path / "new.git"))
    assert await reading.refs(tmp_path / "new.git") == []
    with pytest.raises(NoRef):
        await reading.resolve(tmp_path / "missing.git", "main")
    with pytest.raises(NoRef):
        await reading.tree(tmp_path / "new.git", "main", "")


async def test_resolve_a_branch_full_ref_tag_or_commit_id(repo: Repo) -> None:
    for ref in ("main", "refs/heads/main", repo.second, repo.second[:7], "HEAD"):
        assert await reading.resolve(repo.path, ref) == repo.second
    for ref in ("v1", "refs/tags/v1", repo.first[:12]):
        assert await reading.resolve(repo.path, ref) == repo.first


@pytest.mark.parametrize("ref", [
    "nope", "refs/heads/nope", "0" * 40, "abcdef1", "", "-x", "--all", "--output=/tmp/x", "main~1", "main^",
    ":/first", "@{-1}", "main..v1", "ma in", "main\0", "main^{tree}",
])
async def test_resolve_refuses_what_is_not_a_ref_of_the_repository(repo: Repo, ref: str) -> None:
    with pytest.raises(NoRef):
        await reading.resolve(repo.path, ref)


async def test_tree_of_the_root(repo: Repo) -> None:
    listing = await reading.tree(repo.path, "main", "")
    assert not listing.truncated
    # git's order (by name, bytewise); the submodule "sub" is left out.
    assert [(e.name, e.path, e.type, e.size) for e in listing.entries] == [
        ("README.md", "README.md", "blob", len("hello, wörld\n".encode())),
        ("big.txt", "big.txt", "blob", BLOB_LIMIT + 1),
        ("image.bin", "image.bin", "blob", 11),
        ("latin1.txt", "latin1.txt", "blob", 5),
        ("src", "src", "tree", None),
        ("svc.json", "svc.json", "blob", 16),
    ]
    assert await reading.tree(repo.path, "main", "/") == listing
    old = await reading.tree(repo.path, "v1", "")
    assert [e.name for e in old.entries] == ["README.md", "src", "svc.json"]


async def test_tree_of_a_directory(repo: Repo) -> None:
    src = await reading.tree(repo.path, repo.second[:10], "/src/")
    assert [(e.name, e.path, e.type) for e in src.entries] == [("app.py", "src/app.py", "blob"),
                                                              ("lib", "src/lib", "tree")]
    lib = await reading.tree(repo.path, "refs/heads/main", "src/lib")
    assert lib.entries == [TreeEntry("util.py", "src/lib/util.py", "blob", 6)]


async def test_a_tree_stops_at_the_limit(wide: Path) -> None:
    listing = await reading.tree(wide, "main", "")
    assert listing.truncated and len(listing.entries) == TREE_LIMIT
    assert listing.entries[0].name == "f0000" and listing.entries[-1].name == f"f{TREE_LIMIT - 1:04}"


@pytest.mark.parametrize("path", [
    "a/../..", "../x", "..", "src/..", "a//b", "src/./lib", ".", "src\\lib", "src\0", "missing", "src/missing",
    "README.md", "src/app.py", "sub", "src/app.py/x",
])
async def test_a_path_that_is_not_a_directory_of_the_tree(repo: Repo, path: str) -> None:
    with pytest.raises(NoPath):
        await reading.tree(repo.path, "main", path)


async def test_names_git_allows_are_read_as_they_are(tmp_path: Path) -> None:
    """Names that would be options, pathspec magic or break a line-based reading."""
    bare = tmp_path / "odd.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    names = ["-rf", ":(glob)*", "a\nb", "sp ace", "*"]
    blobs = [git("--git-dir", str(bare), "hash-object", "-w", "--stdin", stdin=n.encode()) for n in names]
    listing = "".join(f"100644 blob {b}\t{n}\0" for b, n in zip(blobs, names, strict=True))
    tree = git("--git-dir", str(bare), "mktree", "-z", stdin=listing.encode())
    commit = git("--git-dir", str(bare), "commit-tree", tree, "-m", "odd")
    git("--git-dir", str(bare), "update-ref", "refs/heads/main", commit)
    assert sorted(e.name for e in (await reading.tree(bare, "main", "")).entries) == sorted(names)
    for name in names:
        assert (await reading.blob(bare, "main", name)).content == name
        assert await reading.has_path(bare, "main", name)
    assert not await reading.has_path(bare, "main", "a")  # "*" and ":(glob)*" matched nothing else


async def test_tree_of_an_unknown_ref(repo: Repo) -> None:
    with pytest.raises(NoRef):
        await reading.tree(repo.path, "nope", "")


async def test_blob_text(repo: Repo) -> None:
    readme = await reading.blob(repo.path, "main", "/README.md")
    assert readme == Blob("README.md", 14, binary=False, too_large=False, content="hello, wörld\n")
    util = await reading.blob(repo.path, "v1", "src/lib/util.py")
    assert util.content == "X = 1\n" and util.path == "src/lib/util.py"


@pytest.mark.parametrize("path", ["image.bin", "latin1.txt"])
async def test_a_binary_blob_comes_without_content(repo: Repo, path: str) -> None:
    found = await reading.blob(repo.path, "main", path)
    assert found.binary and not found.too_large and found.content is None and found.size > 0


async def test_a_blob_over_the_limit_is_not_read(repo: Repo) -> None:
    found = await reading.blob(repo.path, "main", "big.txt")
    assert found == Blob("big.txt", BLOB_LIMIT + 1, binary=False, too_large=True, content=None)


@pytest.mark.parametrize("path", ["", "/", "src", "src/lib/", "sub", "missing.txt", "../README.md", "src//app.py"])
async def test_a_path_that_is_not_a_file(repo: Repo, path: str) -> None:
    with pytest.raises(NoPath):
        await reading.blob(repo.path, "main", path)


async def test_commits_newest_first(repo: Repo) -> None:
    history = await reading.commits(repo.path, "main", 10)
    assert history == [
        Commit(repo.second, "second: one line", "Ada Lovelace <ada@example.com>", "2023-11-15T00:15:00+02:00"),
        Commit(repo.first, "first", "Ada Lovelace <ada@example.com>", "2023-11-15T00:13:20+02:00"),
    ]
    assert await reading.commits(repo.path, "v1", 10) == history[1:]
    assert await reading.commits(repo.path, "main", 0) == history[:1]  # clamped up to 1
    assert await reading.commits(repo.path, "main", -5) == history[:1]


async def test_commits_stop_at_the_limit(long: Path) -> None:
    history = await reading.commits(long, "main")
    assert len(history) == COMMITS_LIMIT
    assert history[0].message == "tab\there \x01 ünï" and history[0].at == "2020-09-13T12:30:04+00:00"
    assert [c.message for c in history[1:6]] == [
        f"commit {COMMITS_LIMIT + 3}", f"commit {COMMITS_LIMIT + 2}", f"commit {COMMITS_LIMIT + 1}", "a long one",
        f"commit {COMMITS_LIMIT - 1}"]
    assert history[5].at == "2020-09-13T12:29:59+00:00"
    assert len(await reading.commits(long, "main", 10_000)) == COMMITS_LIMIT
    five = await reading.commits(long, "main", 5)
    assert [c.id for c in five] == [c.id for c in history[:5]]


async def test_has_path(repo: Repo) -> None:
    for path in ("svc.json", "/svc.json", "src", "src/lib/util.py", "", "sub"):
        assert await reading.has_path(repo.path, repo.second, path), path
    for path in ("nope.json", "src/nope", "../svc.json", "src/../svc.json", "src//app.py"):
        assert not await reading.has_path(repo.path, repo.second, path), path
    assert not await reading.has_path(repo.path, repo.first, "big.txt")
    with pytest.raises(NoRef):
        await reading.has_path(repo.path, "0" * 40, "svc.json")


async def test_archive_holds_the_tree_at_its_top(repo: Repo) -> None:
    data = await reading.archive(repo.path, repo.first)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        files = sorted(m.name for m in tar.getmembers() if m.isfile())
        manifest = tar.extractfile("svc.json")
        assert manifest is not None and manifest.read() == b'{"name": "app"}\n'
    assert files == ["README.md", "src/app.py", "src/lib/util.py", "svc.json"]


async def test_an_archive_over_its_limit(repo: Repo) -> None:
    with pytest.raises(ArchiveTooLarge):
        await reading.archive(repo.path, repo.second, limit=1000)
    with pytest.raises(NoRef):
        await reading.archive(repo.path, "-o/tmp/x")


async def test_a_broken_repository_is_unreachable(tmp_path: Path) -> None:
    bare = tmp_path / "broken.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    blob = git("--git-dir", str(bare), "hash-object", "-w", "--stdin", stdin=b"x\n")
    tree = git("--git-dir", str(bare), "mktree", stdin=f"100644 blob {blob}\tf\n".encode())
    commit = git("--git-dir", str(bare), "commit-tree", tree, "-m", "one")
    git("--git-dir", str(bare), "update-ref", "refs/heads/main", commit)
    (bare / "objects" / tree[:2] / tree[2:]).unlink()  # a loose object lost: the commit's tree
    with pytest.raises(GitUnreachable, match="fatal: not a tree object"):
        await reading.tree(bare, "main", "")
