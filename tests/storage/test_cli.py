"""`svc storage ...` against a real `svc serve` (its object store: files under its data directory,
the free plan's quota set small): status before and after a grant, grant and revoke (asking
first) with the roles' refusals, `cp` up from a file, into a folder and from standard input and
down to a file, a folder and standard output (a big file with its progress bar), `ls` by folders
and recursively across pages, `rm`, and the errors a person meets: not granted (with the command
that grants), over the quota (with the numbers, nothing stored, even when the server refuses
before the body is sent), a key or a side that is not one."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, running_server, uniq

QUOTA = 3_000_000  # bytes: the free plan's quota on this server


@pytest.fixture(scope="module")
def storage_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("svc-storage"), free_storage_bytes=str(QUOTA)) as url:
        yield url


def _team(url: str, home: Path) -> tuple[Cli, Cli, Cli, tuple[str, ...]]:
    """An owner with a project "site", a member and a viewer of its org."""
    owner, member, viewer = (Cli(url, home / name) for name in ("owner", "member", "viewer"))
    org = uniq("sto")
    owner.login(uniq("owner"))
    owner.ok("orgs", "create", org)
    owner.ok("projects", "create", "site", "--org", org)
    for cli, role in ((member, "member"), (viewer, "viewer")):
        subject = uniq(role)
        cli.login(subject)
        owner.ok("members", "add", org, subject, "--role", role)
    return owner, member, viewer, ("--project", "site", "--org", org)


def test_status_grant_revoke_and_the_roles(storage_server: str, tmp_path: Path) -> None:
    owner, member, viewer, where = _team(storage_server, tmp_path)
    before = viewer.ok("storage", "status", *where, "--json").json()
    assert before["granted"] is False and before["quotaBytes"] == QUOTA and before["usedBytes"] == 0
    said = viewer.ok("storage", "status", *where).out
    assert "svc storage grant" in said and "Used: 0 bytes of 2.9 MiB" in said

    viewer.fails("forbidden", "storage", "grant", *where)
    granted = member.ok("storage", "grant", *where, "--json").json()
    assert granted["granted"] is True and granted["prefix"].startswith("p/") and granted["prefix"].endswith("/")
    again = member.ok("storage", "grant", *where).out  # idempotent: the same prefix, said for people
    assert f"under the prefix {granted['prefix']}" in again

    member.fails("forbidden", "storage", "revoke", *where, "--yes")
    owner.fails("cancelled", "storage", "revoke", *where, input="n\n")
    owner.fails("confirm_needed", "storage", "revoke", *where, "--json")
    assert owner.ok("storage", "status", *where, "--json").json()["granted"] is True
    gone = owner.ok("storage", "revoke", *where, input="y\n").out
    assert "no longer has object storage" in gone and "kept" in gone
    assert owner.ok("storage", "status", *where, "--json").json()["granted"] is False


def test_copy_up_and_down_list_and_remove(storage_server: str, tmp_path: Path) -> None:
    owner, member, viewer, where = _team(storage_server, tmp_path)
    member.ok("storage", "grant", *where)
    files = tmp_path / "files"
    files.mkdir()
    big = files / "big.bin"
    big.write_bytes(os.urandom(2 * 1024 * 1024 + 5))  # over a chunk, a progress bar's worth
    (files / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"x" * 100)

    sent = member.ok("storage", "cp", str(big), ":data/big.bin", *where, "--json")
    up = sent.json()
    assert up["key"] == "data/big.bin" and up["size"] == big.stat().st_size
    assert "Uploading" in sent.err and "2.1/2.1 MB" in sent.err  # the progress bar, on stderr
    assert up["contentType"] == "application/octet-stream"
    shown = member.ok("storage", "cp", str(files / "a.png"), ":img/", *where)  # a folder: the file's own name
    assert "Uploaded 108 bytes to :img/a.png in site." in shown.out
    assert shown.err == ""  # a small file: no progress bar
    member.ok("storage", "cp", "-", ":notes/hello.txt", "--content-type", "text/plain", *where,
              input="hello, storage\n")
    member.ok("storage", "cp", str(files / "a.png"), ":top.png", *where)

    # ls: folders by "/" at the top, every key with -r; the API's pages followed to the end.
    top = viewer.ok("storage", "ls", *where, "--json").json()
    assert top["prefixes"] == ["data/", "img/", "notes/"] and [o["key"] for o in top["objects"]] == ["top.png"]
    assert top["objects"][0]["contentType"] == "image/png"
    every = viewer.ok("storage", "ls", "--recursive", "--page-size", "2", *where, "--json").json()
    assert [o["key"] for o in every["objects"]] == ["data/big.bin", "img/a.png", "notes/hello.txt", "top.png"]
    assert every["prefixes"] == []
    folders = viewer.ok("storage", "ls", "--page-size", "1", *where, "--json").json()
    assert folders == top
    inside = viewer.ok("storage", "ls", ":img/", *where)
    assert "img/a.png" in inside.out and "108 bytes" in inside.out and "1 object, 108 bytes." in inside.out
    assert "No objects in site's storage under nothing/" in viewer.ok("storage", "ls", "nothing/", *where).out

    # Down: to a file, into a folder by the key's last part, to standard output; bytes as sent.
    fetched = viewer.ok("storage", "cp", ":data/big.bin", str(tmp_path / "copy.bin"), *where, "--json")
    got = fetched.json()
    assert got["size"] == big.stat().st_size and "Downloading" in fetched.err
    assert hashlib.sha256((tmp_path / "copy.bin").read_bytes()).digest() == hashlib.sha256(big.read_bytes()).digest()
    out = tmp_path / "out"
    out.mkdir()
    said = viewer.ok("storage", "cp", ":img/a.png", str(out), *where).out
    assert (out / "a.png").read_bytes() == (files / "a.png").read_bytes()
    assert f"Wrote 108 bytes of :img/a.png to {out / 'a.png'}." in said
    piped = viewer.ok("storage", "cp", ":notes/hello.txt", "-", *where)
    assert piped.out == "hello, storage\n"
    assert list(out.iterdir()) == [out / "a.png"]  # no temporary file left behind

    # A viewer may read but not write or delete.
    viewer.fails("forbidden", "storage", "cp", str(files / "a.png"), ":v.png", *where)
    viewer.fails("forbidden", "storage", "rm", "top.png", *where)

    # rm: gone from the listing and from usedBytes; again is not an error.
    used = owner.ok("storage", "status", *where, "--json").json()["usedBytes"]
    assert used == big.stat().st_size + 2 * 108 + len("hello, storage\n")
    assert "Deleted :data/big.bin from site." in member.ok("storage", "rm", ":data/big.bin", *where).out
    member.ok("storage", "rm", "data/big.bin", *where)
    after = viewer.ok("storage", "ls", "-r", *where, "--json").json()
    assert "data/big.bin" not in [o["key"] for o in after["objects"]]
    assert owner.ok("storage", "status", *where, "--json").json()["usedBytes"] == used - big.stat().st_size
    missing = viewer.fails("not_found", "storage", "cp", ":data/big.bin", str(tmp_path / "again.bin"), *where)
    assert "No object under that key" in missing.err
    assert not (tmp_path / "again.bin").exists()


def test_over_the_quota_nothing_is_stored_and_the_numbers_are_said(storage_server: str, tmp_path: Path) -> None:
    _owner, member, viewer, where = _team(storage_server, tmp_path)
    member.ok("storage", "grant", *where)
    two = tmp_path / "two.bin"
    two.write_bytes(b"2" * 2_000_000)
    member.ok("storage", "cp", str(two), ":one.bin", *where)

    refused = member.fails("storage_quota_exceeded", "storage", "cp", str(two), ":two.bin", *where)
    assert f"{QUOTA}" in refused.err and "2000000" in refused.err  # the quota and the use, in numbers
    assert "svc storage rm" in refused.err  # what to do next
    # Far past the quota: the server refuses from the headers, before the body is sent; the CLI
    # still says why (not a broken connection).
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as f:
        f.truncate(64 * 1024 * 1024)
    member.fails("storage_quota_exceeded", "storage", "cp", str(huge), ":huge.bin", *where)
    keys = [o["key"] for o in viewer.ok("storage", "ls", "-r", *where, "--json").json()["objects"]]
    assert keys == ["one.bin"]


def test_errors_a_person_meets(storage_server: str, tmp_path: Path) -> None:
    owner, member, _viewer, where = _team(storage_server, tmp_path)
    local = tmp_path / "a.txt"
    local.write_text("a")
    refused = member.fails("not_granted", "storage", "ls", *where)
    assert "svc storage grant --project site" in refused.err
    member.fails("not_granted", "storage", "cp", str(local), ":a.txt", *where)
    member.ok("storage", "grant", *where)

    # Which side is remote must be said; both or neither is refused before any request.
    assert "a leading `:`" in member.fails("bad_request", "storage", "cp", str(local), str(tmp_path / "b"), *where).err
    member.fails("bad_request", "storage", "cp", ":a", ":b", *where)
    member.fails("bad_request", "storage", "cp", str(tmp_path / "nothing.txt"), ":x", *where)
    member.fails("bad_request", "storage", "cp", "-", ":", *where, input="no name")
    # A key the server refuses: its words and field.
    bad = member.fails("bad_request", "storage", "cp", str(local), ":a/../b", *where)
    assert '"." or ".."' in bad.err
    member.fails("bad_request", "storage", "rm", "/lead", *where)
    assert owner.ok("storage", "ls", "-r", *where, "--json").json() == {"objects": [], "prefixes": []}
    json.loads(owner.ok("storage", "status", *where, "--json").out)  # --json prints JSON only
