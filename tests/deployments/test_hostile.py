"""The hostile corpus: bundles built by the tests that must be refused (400 bad_bundle or 413
bundle_too_large) and leave nothing behind: no row, no version used up, no file under the data dir
(no site, no staging dir, no blob, no temporary file)."""

from __future__ import annotations

import bz2
import random
import tarfile
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from svc.domains.deployments.settings import DeploymentSettings
from svc.models import Project
from svc.settings import Settings
from tests.deployments.conftest import Env, make_env
from tests.support import bundles
from tests.support.api import Svc, assert_error, running_svc
from tests.support.bundles import dir_info, file_info, gz, header, member, pax, raw_bundle, tar_bytes
from tests.support.config import configured

# Bounds lowered for the corpus, so "too large" bundles stay small.
MAX_COMPRESSED = 256 * 1024
MAX_UNPACKED = 1024 * 1024
MAX_ENTRIES = 50


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    status: int = 400
    reason: str | None = None  # details.reason (400) or details.limit (413)


def _valid_tar() -> bytes:
    return tar_bytes([file_info("svc.json", bundles.manifest()), file_info("assets/index.html", b"<h1>hi</h1>")])


def _tar_with(*entries: tuple[tarfile.TarInfo, bytes | None], manifest: bool = True,
              fmt: int = tarfile.PAX_FORMAT) -> bytes:
    head = [file_info("svc.json", bundles.manifest())] if manifest else []
    return gz(tar_bytes([*head, *entries], fmt=fmt))


def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.devmajor, info.devminor = 1, 3
    return info, None


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1:]


def corpus() -> list[Case]:
    good = bundles.site()
    tar = _valid_tar()
    long_dots = "../" * 60 + "evil.html"
    cases = [
        # Not gzip, or not one.
        Case("plain text", b"hello, this is not a bundle", 400, "not_gzip"),
        Case("empty body", b"", 400, "not_gzip"),
        Case("uncompressed tar", tar, 400, "not_gzip"),
        Case("bzip2 tar", bz2.compress(tar), 400, "not_gzip"),
        Case("zip file", b"PK\x03\x04" + bytes(200), 400, "not_gzip"),
        Case("tar inside gzip inside gzip", gz(gz(tar)), 400, "corrupt_tar"),
        Case("garbage after the gzip stream", good + b"trailing junk", 400, "trailing_data"),
        Case("flipped byte in the gzip trailer (crc)", _flip(good, len(good) - 6), 400, "corrupt_gzip"),
        Case("flipped gzip magic", _flip(good, 0), 400, "not_gzip"),
        # Truncated at several offsets.
        *[Case(f"truncated at {at} of {len(good)}", good[:at], 400, "truncated")
          for at in (1, 9, 20, len(good) // 2, len(good) - 8, len(good) - 1)],
        Case("tar without end-of-archive block", gz(tar[:-1024 * 9]), 400, "truncated"),
        Case("tar cut inside a file's data", gz(tar[:512 + 100]), 400, "truncated"),
        Case("data after the end of the tar archive", gz(tar + b"second archive"), 400, "trailing_data"),
        # Names.
        Case("absolute path", _tar_with(file_info("/etc/passwd", b"x")), 400, "absolute_path"),
        Case("parent path", _tar_with(file_info("../evil.html", b"x")), 400, "parent_path"),
        Case("parent path inside", _tar_with(file_info("assets/../../evil.html", b"x")), 400, "parent_path"),
        Case("dot-slash parent", _tar_with(file_info("./../evil.html", b"x")), 400, "parent_path"),
        Case("trailing ..", _tar_with(dir_info("assets/..")), 400, "parent_path"),
        Case("backslash traversal", _tar_with(file_info("assets\\..\\..\\evil", b"x")), 400, "bad_name"),
        Case("newline in a name", _tar_with(file_info("assets/a\nb.html", b"x")), 400, "bad_name"),
        Case("component over 255 bytes", _tar_with(file_info("assets/" + "a" * 256, b"x")), 400, "bad_name"),
        Case("not UTF-8", raw_bundle(member(b"assets/caf\xe9.html", b"x")), 400, "bad_name"),
        Case("garbage after NUL in a name", raw_bundle(member(b"assets/a.html\0../../evil", b"x")), 400, "bad_name"),
        Case("empty name", raw_bundle(member(b"", b"x")), 400, "bad_name"),
        Case("pax path traversal", raw_bundle(pax({"path": "../../evil.html"}), member(b"innocent.html", b"x")),
             400, "parent_path"),
        Case("pax absolute path", raw_bundle(pax({"path": "/tmp/evil"}), member(b"innocent.html", b"x")),
             400, "absolute_path"),
        Case("pax path with NUL", raw_bundle(pax({"path": b"assets/a\0../../x"}), member(b"a", b"x")),
             400, "bad_name"),
        Case("GNU long name traversal", _tar_with(file_info(long_dots, b"x"), fmt=tarfile.GNU_FORMAT),
             400, "parent_path"),
        Case("ustar prefix traversal", raw_bundle(member(b"evil.html", b"x", prefix=b"../../..")), 400, "parent_path"),
        Case("huge GNU long name", raw_bundle(member(b"././@LongLink", b"a" * 1024 * 1024, kind=b"L"),
                                              member(b"x", b"x")), 400, "bad_name"),
        Case("huge pax header", raw_bundle(pax({"comment": "a" * 100_000}), member(b"x", b"x")), 400, "corrupt_tar"),
        # Links and special files.
        Case("symlink out", _tar_with(_special("assets/passwd", tarfile.SYMTYPE, "/etc/passwd")), 400, "link"),
        Case("symlink inside", _tar_with(_special("assets/a.html", tarfile.SYMTYPE, "index.html")), 400, "link"),
        Case("hardlink", _tar_with(_special("assets/h", tarfile.LNKTYPE, "svc.json")), 400, "link"),
        Case("GNU long link name", raw_bundle(member(b"././@LongLink", b"/etc/passwd\0", kind=b"K"),
                                              header(b"l", kind=b"2")), 400, "link"),
        Case("character device", _tar_with(_special("assets/null", tarfile.CHRTYPE)), 400, "special_file"),
        Case("block device", _tar_with(_special("assets/sda", tarfile.BLKTYPE)), 400, "special_file"),
        Case("fifo", _tar_with(_special("assets/pipe", tarfile.FIFOTYPE)), 400, "special_file"),
        Case("GNU sparse file", raw_bundle(member(b"sparse", b"x", kind=b"S")), 400, "unsupported_entry"),
        Case("pax sparse file", raw_bundle(pax({"GNU.sparse.major": "1"}), member(b"s", b"x")),
             400, "unsupported_entry"),
        Case("volume header", raw_bundle(member(b"vol", kind=b"V")), 400, "unsupported_entry"),
        # Duplicates.
        Case("same file twice", _tar_with(file_info("assets/a", b"1"), file_info("assets/a", b"2")),
             400, "duplicate"),
        Case("file then directory", _tar_with(file_info("assets/a", b"1"), dir_info("assets/a")), 400, "duplicate"),
        Case("directory then file", _tar_with(dir_info("assets/a"), file_info("assets/a", b"1")), 400, "duplicate"),
        Case("file under a file", _tar_with(file_info("assets/a", b"1"), file_info("assets/a/b", b"2")),
             400, "duplicate"),
        Case("svc.json twice", _tar_with(file_info("svc.json", b"{}")), 400, "duplicate"),
        Case("svc.json and ./svc.json", _tar_with(file_info("./svc.json", b"{}")), 400, "duplicate"),
        Case("same directory twice", _tar_with(dir_info("assets"), dir_info("assets/")), 400, "duplicate"),
        # The manifest.
        Case("no svc.json", _tar_with(file_info("assets/index.html", b"x"), manifest=False), 400, "missing_manifest"),
        Case("svc.json in a subdirectory", _tar_with(file_info("assets/svc.json", b"{}"), manifest=False),
             400, "missing_manifest"),
        Case("svc.json is a directory", _tar_with(dir_info("svc.json"), manifest=False), 400, "missing_manifest"),
        Case("svc.json is a list", _tar_with(file_info("svc.json", b"[1, 2]"), manifest=False), 400, "bad_manifest"),
        Case("svc.json is not JSON", _tar_with(file_info("svc.json", b"{db: true"), manifest=False),
             400, "bad_manifest"),
        Case("svc.json is empty", _tar_with(file_info("svc.json", b""), manifest=False), 400, "bad_manifest"),
        Case("svc.json with NaN", _tar_with(file_info("svc.json", b'{"a": NaN}'), manifest=False),
             400, "bad_manifest"),
        Case("svc.json with a number that overflows to infinity",
             _tar_with(file_info("svc.json", b'{"a": 1e999}'), manifest=False), 400, "bad_manifest"),
        Case("svc.json with a number that overflows to -infinity",
             _tar_with(file_info("svc.json", b'{"a": [-1e400]}'), manifest=False), 400, "bad_manifest"),
        Case("svc.json with NUL", _tar_with(file_info("svc.json", b'{"a": "\\u0000"}'), manifest=False),
             400, "bad_manifest"),
        Case("svc.json with a lone surrogate", _tar_with(file_info("svc.json", b'{"a": "\\ud800"}'), manifest=False),
             400, "bad_manifest"),
        Case("svc.json deeply nested", _tar_with(file_info("svc.json", b"[" * 30000 + b"]" * 30000), manifest=False),
             400, "bad_manifest"),
        Case("svc.json over 64 KiB", _tar_with(file_info("svc.json", b'{"a": "' + b"x" * 70_000 + b'"}'),
                                               manifest=False), 400, "bad_manifest"),
        # Corrupt headers.
        Case("bad checksum", raw_bundle(member(b"a", b"x", checksum=b"0000000\0")), 400, "corrupt_tar"),
        Case("size not a number", raw_bundle(header(b"a", size_field=b"12z4567\0\0\0\0\0")), 400, "corrupt_tar"),
        Case("negative base-256 size", raw_bundle(header(b"a", size_field=b"\xff" * 12)), 400, "corrupt_tar"),
        Case("directory with data", raw_bundle(member(b"assets/", b"data", kind=b"5")), 400, "corrupt_tar"),
        Case("two pax headers for one entry", raw_bundle(pax({"path": "a"}), pax({"path": "b"}), member(b"c", b"x")),
             400, "corrupt_tar"),
        Case("pax header then the end", raw_bundle(pax({"path": "a"})), 400, "corrupt_tar"),
        Case("malformed pax record", raw_bundle(member(b"p", b"99 path=a\n", kind=b"x"), member(b"c", b"x")),
             400, "corrupt_tar"),
        # Bounds (lowered for this test).
        Case("over the compressed bound", bundles.site({"assets/noise": _noise(300_000)}),
             413, "compressed"),
        Case("over the unpacked bound", bundles.site({"assets/zeros": bytes(MAX_UNPACKED + 1)}), 413, "unpacked"),
        Case("unpacked bound over many files",
             bundles.site({f"assets/{i}": bytes(MAX_UNPACKED // 10) for i in range(12)}), 413, "unpacked"),
        Case("too many entries", bundles.site({f"assets/{i}.txt": b"x" for i in range(MAX_ENTRIES)}), 413, "entries"),
        Case("too many directories", _tar_with(*[dir_info(f"d{i}") for i in range(MAX_ENTRIES + 5)]), 413, "entries"),
        Case("header claims a huge file", raw_bundle(header(b"assets/big", size=2**40)), 413, "unpacked"),
        Case("zero padding bomb", b"".join(bundles.bomb(_valid_tar(), 8 * MAX_UNPACKED)), 413, "unpacked"),
    ]
    return cases


def _noise(n: int) -> bytes:
    return random.Random(7).randbytes(n)


@pytest.fixture
async def small(settings: Settings) -> AsyncIterator[Svc]:
    bounded = configured(settings, max_bundle_bytes=MAX_COMPRESSED, max_unpacked_bytes=MAX_UNPACKED,
                         max_bundle_entries=MAX_ENTRIES)
    async with running_svc(bounded) as svc:
        yield svc


async def _next_version(env: Env) -> int:
    async with env.svc.ctx.db.transaction(write=False) as s:
        return int((await s.scalars(select(Project.next_version).where(Project.name == env.project))).one())


async def check_refused(env: Env, cases: list[Case]) -> None:
    """Upload every case; collect every mismatch and report them all."""
    before_files, before_rows = env.files(), await env.rows()
    failures = []
    for case in cases:
        r = await env.deploy(case.body)
        problems = []
        if r.status_code != case.status:
            problems.append(f"status {r.status_code}: {r.text[:300]}")
        else:
            body = assert_error(r, case.status, "bad_bundle" if case.status == 400 else "bundle_too_large")
            got = (body["details"] or {}).get("reason" if case.status == 400 else "limit")
            if case.reason is not None and got != case.reason:
                problems.append(f"reason {got!r}, expected {case.reason!r}: {body['message']}")
        if await env.rows() != before_rows:
            problems.append("a deployment row was written")
        left = env.files() ^ before_files
        if left:
            problems.append(f"files left behind or removed: {sorted(left)[:5]}")
        if problems:
            failures.append(f"{case.name}: {'; '.join(problems)}")
    assert not failures, "\n".join(failures)
    assert await _next_version(env) == 1


async def test_hostile_corpus_is_refused_and_leaves_nothing_behind(small: Svc) -> None:
    env = await make_env(small)
    # Another project's deployment exists, so the data dir has sites/, blobs/ and tmp/ to compare.
    other = await make_env_second(env)
    r = await other.deploy(bundles.site())
    assert r.status_code == 201, r.text
    cases = corpus()
    assert len(cases) >= 30
    assert len({c.name for c in cases}) == len(cases)
    await check_refused(env, cases)
    # And a good bundle still deploys as version 1 afterwards.
    r = await env.deploy(bundles.site({"assets/ok.html": b"ok"}))
    assert r.status_code == 201 and r.json()["version"] == 1, r.text


async def make_env_second(env: Env) -> Env:
    r = await env.owner.client.post(f"/v1/orgs/{env.org}/projects", json={"name": "other"})
    assert r.status_code == 201, r.text
    return Env(svc=env.svc, owner=env.owner, org=env.org, project="other")


async def test_gzip_bomb_of_one_gigabyte_is_refused_at_the_bound(env: Env) -> None:
    """About 1 MB of gzip that inflates to 1 GiB, with svc's default bounds: refused with 413 once
    the inflated stream passes the unpacked bound, long before the end of the body."""
    assert env.svc.ctx.settings_of(DeploymentSettings).max_unpacked_bytes == 500 * 1024 * 1024
    other = await make_env_second(env)
    assert (await other.deploy(bundles.site())).status_code == 201
    before = env.files()
    for name, prefix in (("zeros after a valid archive", _valid_tar()), ("zeros only", b"")):
        stream = bundles.Stream(bundles.bomb(prefix, 1 << 30))
        r = await env.deploy(stream.aiter())
        body = assert_error(r, 413, "bundle_too_large")
        assert body["details"]["limit"] == "unpacked", name
        assert stream.sent < 900_000, (name, stream.sent)  # stopped before the ~1.06 MB body ended
        assert env.files() == before, name
    # A header that claims a 1 GiB file is refused at the header, before any of its data.
    stream = bundles.Stream(bundles.bomb(header(b"svc.json", size=1 << 30), 1 << 30))
    assert_error(await env.deploy(stream.aiter()), 413, "bundle_too_large")
    assert stream.sent < 64 * 1024
    assert await env.rows() == 1 and env.files() == before
