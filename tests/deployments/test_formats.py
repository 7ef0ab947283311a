"""Bundles as real tools write them are accepted and unpacked exactly: GNU tar (gnu, posix/pax,
ustar; with ./ prefixes and record padding), git archive (a global pax header), Python's tarfile
in each format, multi-member gzip, long and non-ASCII names, empty files and directories."""

from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
from pathlib import Path

from svc.domains.deployments.artifacts import site_dir
from tests.deployments.conftest import Env

LONG = "assets/" + "/".join(["a-rather-long-directory-name"] * 5) + "/and-a-file-name-that-is-long-too.html"
TREE: dict[str, bytes] = {
    "svc.json": b'{"name": "formats", "storage": true, "main": "main.js"}',
    "assets/index.html": b"<h1>home</h1>\n",
    "assets/Index.html": b"case matters\n",
    "assets/caf\u00e9/men\u00fc \u2603.html": b"unicode\n",
    "assets/empty.txt": b"",
    LONG: b"long\n",
    "worker/main.js": b"export default { fetch() { return new Response('ok') } }\n",
}
EMPTY_DIRS = ("assets/empty-dir",)


def _write_tree(root: Path) -> None:
    for name, data in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for d in EMPTY_DIRS:
        (root / d).mkdir(parents=True)


def _unpacked(site: Path) -> tuple[dict[str, bytes], set[str]]:
    files = {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    dirs = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_dir() and not any(p.iterdir())}
    return files, dirs


def _gnu_tar(root: Path, fmt: str) -> bytes:
    raw = subprocess.run(["tar", f"--format={fmt}", "-cf", "-", "-C", str(root), "."], check=True,
                         capture_output=True).stdout
    return gzip.compress(raw)


def _git_archive(root: Path) -> bytes:
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (root / "assets/empty-dir/.keep").write_bytes(b"")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "site"], check=True)
    return subprocess.run([*git, "archive", "--format=tar.gz", "HEAD"], check=True, capture_output=True).stdout


def _python_tar(root: Path, fmt: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=fmt) as tar:
        tar.add(root, arcname=".")
    return buf.getvalue()


def _two_members(root: Path) -> bytes:
    raw = gzip.decompress(_gnu_tar(root, "gnu"))
    half = len(raw) // 2
    return gzip.compress(raw[:half]) + gzip.compress(raw[half:])


MAKERS = {
    "gnu tar --format=gnu": lambda root: _gnu_tar(root, "gnu"),
    "gnu tar --format=posix": lambda root: _gnu_tar(root, "posix"),
    "gnu tar --format=ustar": lambda root: _gnu_tar(root, "ustar"),
    "git archive": _git_archive,
    "python tarfile pax": lambda root: _python_tar(root, tarfile.PAX_FORMAT),
    "python tarfile gnu": lambda root: _python_tar(root, tarfile.GNU_FORMAT),
    "two gzip members": _two_members,
}


async def test_real_world_bundles_unpack_exactly(env: Env, tmp_path: Path) -> None:
    for n, (maker, make) in enumerate(MAKERS.items()):
        root = tmp_path / f"src{n}"
        _write_tree(root)
        r = await env.deploy(make(root))
        assert r.status_code == 201, (maker, r.text)
        files, empty_dirs = _unpacked(site_dir(env.svc.ctx, r.json()["digest"]))
        expected = dict(TREE)
        if maker == "git archive":
            expected["assets/empty-dir/.keep"] = b""  # git keeps no empty directories
        else:
            assert empty_dirs == set(EMPTY_DIRS), maker
        assert files == expected, maker
        assert r.json()["fileCount"] == len(expected), maker
    overview = (await env.owner.client.get(f"{env.base}/overview")).json()
    assert overview["resources"]["storage"]["declared"] is True


async def test_long_non_ascii_names_in_gnu_and_pax_formats(env: Env, tmp_path: Path) -> None:
    # Over 100 bytes of UTF-8: the header's own name field is cut inside a character.
    name = "assets/" + "\u00e9t\u00e9-" * 40 + ".html"
    tree = {"svc.json": b"{}", name: b"long"}
    for n, fmt in enumerate(("gnu", "posix")):
        root = tmp_path / f"t{n}"
        for rel, data in tree.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        r = await env.deploy(_gnu_tar(root, fmt))
        assert r.status_code == 201, (fmt, r.text)
        files, _ = _unpacked(site_dir(env.svc.ctx, r.json()["digest"]))
        assert files == tree, fmt
