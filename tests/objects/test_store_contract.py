"""The object store's promises (svc/adapters/objects/port.py), the same for both backends: files
under the data dir, and S3 (moto's server). Keys here are whole keys (`p/<project>/...`) as the
storage area makes them; what a tenant's key holds never takes an object out of its project's
prefix, nor out of the store."""

from __future__ import annotations

import asyncio
import hashlib
import os
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from svc.adapters.objects import build_object_store
from svc.adapters.objects.files import FileObjectStore
from svc.adapters.objects.port import (
    BadCursor,
    ObjectBody,
    ObjectMissing,
    ObjectStore,
    ObjectTooLarge,
    RangeNotSatisfiable,
)
from svc.adapters.objects.s3 import S3ObjectStore
from svc.settings import Settings
from tests.support.config import configured
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, client, create_bucket, moto_server, object_keys, s3_settings

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def moto_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One moto S3 server for the module; each test makes a bucket of its own."""
    with moto_server(tmp_path_factory.mktemp("moto")) as url:
        yield url


@dataclass
class Env:
    store: ObjectStore
    kind: str
    root: Path  # the test's directory: the data dir is under it
    moto_url: str = ""
    bucket: str = ""

    def stored(self) -> list[str]:
        """What the backend holds: every file under the test's directory (files), or every key in
        the bucket (S3)."""
        if self.kind == "s3":
            return object_keys(self.moto_url, self.bucket)
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())


@pytest.fixture(params=["files", "s3"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Env:
    settings = Settings(data_dir=tmp_path / "data")
    if request.param == "files":
        store = build_object_store(configured(settings))
        assert isinstance(store, FileObjectStore) and store.root == tmp_path / "data" / "objects"
        return Env(store, "files", tmp_path)
    url = request.getfixturevalue("moto_url")
    bucket = f"objects-{uuid.uuid4().hex[:12]}"
    create_bucket(url, bucket)
    # The blob store's S3 settings (another bucket), the objects' own bucket named apart.
    config = configured(s3_settings(settings, url, "the-blobs-bucket"), storage_backend="s3", storage_s3_bucket=bucket)
    store = build_object_store(config)
    assert isinstance(store, S3ObjectStore) and store.bucket == bucket
    return Env(store, "s3", tmp_path, url, bucket)


async def body(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def read(got: ObjectBody) -> bytes:
    return b"".join([chunk async for chunk in got.chunks])


async def get_bytes(store: ObjectStore, key: str, **range_: int | None) -> bytes:
    return await read(await store.get(key, **range_))


async def put(store: ObjectStore, key: str, data: bytes, content_type: str | None = None) -> None:
    await store.put(key, body(data), max_bytes=len(data) + 1, content_type=content_type)


# --- put, get, head, delete ---

async def test_an_object_round_trips_with_its_size_etag_and_content_type(env: Env) -> None:
    data = b"hello, storage\n" * 100
    info = await env.store.put("p/a/docs/hello.txt", body(data[:700], b"", data[700:]), max_bytes=len(data),
                               content_type="text/plain; charset=utf-8")
    md5 = f'"{hashlib.md5(data).hexdigest()}"'
    assert (info.key, info.size, info.etag, info.content_type) == ("p/a/docs/hello.txt", len(data), md5,
                                                                   "text/plain; charset=utf-8")
    assert info.uploaded.tzinfo is not None
    got = await env.store.get("p/a/docs/hello.txt")
    assert (got.start, got.end, got.length) == (0, len(data) - 1, len(data))
    assert (got.info.size, got.info.etag, got.info.content_type) == (len(data), md5, "text/plain; charset=utf-8")
    assert await read(got) == data
    head = await env.store.head("p/a/docs/hello.txt")
    assert head is not None and (head.size, head.etag, head.content_type) == (len(data), md5,
                                                                              "text/plain; charset=utf-8")
    assert abs((head.uploaded - info.uploaded).total_seconds()) < 120


async def test_an_empty_object_and_one_without_a_content_type(env: Env) -> None:
    info = await env.store.put("p/a/empty", body(), max_bytes=0)
    assert (info.size, info.etag, info.content_type) == (0, f'"{hashlib.md5(b"").hexdigest()}"', None)
    got = await env.store.get("p/a/empty")
    assert (got.length, got.info.content_type, await read(got)) == (0, None, b"")
    head = await env.store.head("p/a/empty")
    assert head is not None and (head.size, head.content_type) == (0, None)


async def test_a_put_replaces_the_object_whole(env: Env) -> None:
    await put(env.store, "p/a/k", b"the first version, rather longer", "text/plain")
    info = await env.store.put("p/a/k", body(b"second"), max_bytes=100, content_type="application/json")
    assert await get_bytes(env.store, "p/a/k") == b"second"
    head = await env.store.head("p/a/k")
    assert head == info or (head is not None and (head.size, head.etag, head.content_type) == (
        6, f'"{hashlib.md5(b"second").hexdigest()}"', "application/json"))
    listing = await env.store.list("p/a/")
    assert [(o.key, o.size) for o in listing.objects] == [("p/a/k", 6)]


async def test_a_put_says_the_size_of_the_object_it_replaced(env: Env) -> None:
    """What usedBytes moves by (a new object's size less the replaced one's), with no look first."""
    first = await env.store.put("p/a/k", body(b"x" * 40), max_bytes=100)
    again = await env.store.put("p/a/k", body(b"y" * 7), max_bytes=100)
    assert (first.size, first.replaced, again.size, again.replaced) == (40, 0, 7, 40)
    # A multipart upload (S3: over 8 MiB) replacing one, and one replaced by a single part.
    big = await env.store.put("p/a/k", chunked(9 * MiB, MiB), max_bytes=9 * MiB)
    small = await env.store.put("p/a/k", body(b"z"), max_bytes=1)
    assert (big.replaced, small.replaced) == (7, 9 * MiB)
    if env.kind == "s3":  # a store without If-None-Match on a put: a head first, the same answer
        plain = S3ObjectStore(bucket=env.bucket, endpoint_url=env.moto_url, access_key_id=ACCESS_KEY,
                              secret_access_key=SECRET_KEY)
        plain._conditional = False
        assert (await plain.put("p/a/k", body(b"ab"), max_bytes=2)).replaced == 1
        assert (await plain.put("p/a/new", body(b"ab"), max_bytes=2)).replaced == 0


async def test_a_missing_object(env: Env) -> None:
    with pytest.raises(ObjectMissing):
        await env.store.get("p/a/nothing")
    with pytest.raises(ObjectMissing):
        await env.store.get("p/a/nothing", start=0, end=1)
    assert await env.store.head("p/a/nothing") is None
    assert await env.store.delete("p/a/nothing") is None


async def test_delete_says_what_it_deleted_and_is_idempotent(env: Env) -> None:
    await put(env.store, "p/a/dir/k", b"12345", "text/plain")
    await put(env.store, "p/a/dir/other", b"x")
    deleted = await env.store.delete("p/a/dir/k")
    assert deleted is not None and (deleted.key, deleted.size, deleted.content_type) == ("p/a/dir/k", 5, "text/plain")
    assert await env.store.delete("p/a/dir/k") is None
    assert await env.store.head("p/a/dir/k") is None
    assert await get_bytes(env.store, "p/a/dir/other") == b"x"
    assert [o.key for o in (await env.store.list("p/a/")).objects] == ["p/a/dir/other"]
    await env.store.delete("p/a/dir/other")
    assert (await env.store.list("p/a/", delimiter="/")) == (await env.store.list("p/a/")) and not (
        await env.store.list("p/a/", delimiter="/")).prefixes


# --- ranges ---

@pytest.mark.parametrize(("start", "end", "expected"), [
    (2, 5, b"2345"), (0, 0, b"0"), (2, None, b"23456789"), (7, 100, b"789"), (None, 3, b"789"),
    (None, 100, b"0123456789"), (9, 9, b"9"),
])
async def test_a_range_reads_only_those_bytes(env: Env, start: int | None, end: int | None, expected: bytes) -> None:
    await put(env.store, "p/a/digits", b"0123456789")
    got = await env.store.get("p/a/digits", start=start, end=end)
    assert got.info.size == 10
    first = b"0123456789".index(expected)
    assert (got.start, got.end, got.length) == (first, first + len(expected) - 1, len(expected))
    assert await read(got) == expected


@pytest.mark.parametrize(("start", "end"), [(10, None), (10, 12), (50, 60), (None, 0)])
async def test_a_range_past_the_end_is_not_satisfiable(env: Env, start: int | None, end: int | None) -> None:
    await put(env.store, "p/a/digits", b"0123456789")
    with pytest.raises(RangeNotSatisfiable) as refused:
        await env.store.get("p/a/digits", start=start, end=end)
    assert refused.value.size == 10


async def test_any_range_of_an_empty_object_is_not_satisfiable(env: Env) -> None:
    await env.store.put("p/a/empty", body(), max_bytes=0)
    for start, end in ((0, None), (0, 5), (None, 3)):
        with pytest.raises(RangeNotSatisfiable):
            await env.store.get("p/a/empty", start=start, end=end)


async def test_a_range_that_ends_before_it_starts_is_refused(env: Env) -> None:
    await put(env.store, "p/a/digits", b"0123456789")
    with pytest.raises(ValueError):
        await env.store.get("p/a/digits", start=5, end=2)


# --- too large, broken off, half-written ---

async def test_a_body_past_max_bytes_is_refused_and_the_old_object_kept(env: Env) -> None:
    await put(env.store, "p/a/k", b"old", "text/plain")
    with pytest.raises(ObjectTooLarge):
        await env.store.put("p/a/k", body(b"x" * 60, b"y" * 60), max_bytes=100, content_type="image/png")
    with pytest.raises(ObjectTooLarge):
        await env.store.put("p/a/new", body(b"x" * 101), max_bytes=100)
    assert await get_bytes(env.store, "p/a/k") == b"old"
    head = await env.store.head("p/a/k")
    assert head is not None and head.content_type == "text/plain"
    assert await env.store.head("p/a/new") is None
    assert [o.key for o in (await env.store.list("p/")).objects] == ["p/a/k"]


async def test_a_large_body_past_max_bytes_is_refused_after_parts_went_up(env: Env) -> None:
    """The S3 backend has begun a multipart upload when the body passes the bound: it is aborted."""
    await put(env.store, "p/a/k", b"old")
    with pytest.raises(ObjectTooLarge):
        await env.store.put("p/a/k", chunked(20 * MiB, 256 * 1024), max_bytes=18 * MiB)
    assert await get_bytes(env.store, "p/a/k") == b"old"
    assert await env.store.usage("p/") == (3, 1)
    if env.kind == "s3":
        assert not client(env.moto_url).list_multipart_uploads(Bucket=env.bucket).get("Uploads")
    else:
        assert env.stored() == ["data/objects/dp/da/fk"]


async def test_a_body_that_breaks_off_stores_nothing(env: Env) -> None:
    await put(env.store, "p/a/k", b"old")

    async def broken() -> AsyncIterator[bytes]:
        yield b"x" * MiB
        raise ConnectionResetError("the client went away")

    with pytest.raises(ConnectionResetError):
        await env.store.put("p/a/k", broken(), max_bytes=10 * MiB)
    assert await get_bytes(env.store, "p/a/k") == b"old"
    assert await env.store.usage("p/") == (3, 1)


async def test_an_upload_under_way_is_never_seen(env: Env) -> None:
    await put(env.store, "p/a/k", b"old")
    halfway, finish = asyncio.Event(), asyncio.Event()

    async def slow() -> AsyncIterator[bytes]:
        yield b"n" * (2 * MiB)  # past a put's first batch: a temporary file is written (files)
        halfway.set()
        await finish.wait()
        yield b"ew"

    writing = asyncio.create_task(env.store.put("p/a/k", slow(), max_bytes=10 * MiB))
    await halfway.wait()
    assert await get_bytes(env.store, "p/a/k") == b"old"
    listing = await env.store.list("p/")
    assert [(o.key, o.size) for o in listing.objects] == [("p/a/k", 3)] and listing.prefixes == []
    assert await env.store.usage("p/") == (3, 1)
    finish.set()
    info = await writing
    assert info.size == 2 * MiB + 2
    assert await env.store.usage("p/") == (2 * MiB + 2, 1)


async def test_puts_and_deletes_side_by_side_in_one_folder(env: Env) -> None:
    """A delete removes the folders it emptied while another put is putting an object there: none
    of those puts is lost, and the last put of a key is what it holds."""
    keys = [f"p/a/d{i // 2}/e/k{i}" for i in range(16)]  # two keys to a folder

    async def churn(key: str) -> None:
        for round_ in range(20):
            await put(env.store, key, f"{key}.{round_}".encode())
            if round_ < 19:
                await env.store.delete(key)

    await asyncio.gather(*(churn(key) for key in keys))
    assert sorted(o.key for o in (await env.store.list("p/a/")).objects) == sorted(keys)
    for key in keys:
        assert await get_bytes(env.store, key) == f"{key}.19".encode()


# --- listing ---

KEYS = ["p/a/a", "p/a/a-b", "p/a/a/b", "p/a/a/c/d", "p/a/B", "p/a/z", "p/a/é", "p/a/\U0001f600", "p/a/\uff5a",
        "p/a/a.b", "p/a/a0", "p/a/x/", "p/a/x//y", "p/a/ab/c", "p/other"]


def expected(keys: Iterable[str], prefix: str, delimiter: str | None) -> tuple[list[str], list[str]]:
    """What S3 lists: the keys under prefix in UTF-8 byte order, those with the delimiter after
    the prefix folded into their common prefix."""
    objects, prefixes = [], []
    for key in sorted((k for k in keys if k.startswith(prefix)), key=lambda k: k.encode()):
        at = key.find(delimiter, len(prefix)) if delimiter else -1
        if at < 0:
            objects.append(key)
        elif key[:at + len(delimiter or "")] not in prefixes:
            prefixes.append(key[:at + len(delimiter or "")])
    return objects, prefixes


async def listed(store: ObjectStore, prefix: str, *, limit: int, delimiter: str | None = None,
                 ) -> tuple[list[str], list[str], int]:
    objects: list[str] = []
    prefixes: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await store.list(prefix, cursor=cursor, limit=limit, delimiter=delimiter)
        pages += 1
        assert len(page.objects) + len(page.prefixes) <= limit
        objects += [o.key for o in page.objects]
        prefixes += page.prefixes
        if page.cursor is None:
            return objects, prefixes, pages
        cursor = page.cursor
        assert pages < 100


async def test_a_listing_is_in_utf8_byte_order_and_pages_with_a_cursor(env: Env) -> None:
    for key in KEYS:
        await put(env.store, key, key.encode())
    whole = await env.store.list("p/a/")
    assert [o.key for o in whole.objects] == expected(KEYS, "p/a/", None)[0] and whole.cursor is None
    assert whole.prefixes == []
    assert [o.size for o in whole.objects] == [len(o.key.encode()) for o in whole.objects]
    assert all(o.etag == f'"{hashlib.md5(o.key.encode()).hexdigest()}"' for o in whole.objects)
    for limit in (1, 2, 3, 7):
        objects, prefixes, pages = await listed(env.store, "p/a/", limit=limit)
        assert (objects, prefixes) == expected(KEYS, "p/a/", None)
        assert pages >= -(-len(objects) // limit)
    first = await env.store.list("p/a/", limit=3)
    assert len(first.objects) == 3 and first.cursor is not None


@pytest.mark.parametrize(("prefix", "delimiter"), [
    ("p/a/", "/"), ("p/", "/"), ("p/a/a", "/"), ("p/a/x/", "/"), ("p/a/", "b"), ("", "/"), ("p/a/", "/c/"),
])
async def test_a_delimiter_folds_keys_into_prefixes_page_after_page(env: Env, prefix: str, delimiter: str) -> None:
    for key in KEYS:
        await put(env.store, key, b"1")
    page = await env.store.list(prefix, delimiter=delimiter)
    assert ([o.key for o in page.objects], page.prefixes) == expected(KEYS, prefix, delimiter)
    for limit in (1, 2, 5):
        objects, prefixes, _ = await listed(env.store, prefix, limit=limit, delimiter=delimiter)
        assert (objects, prefixes) == expected(KEYS, prefix, delimiter), limit


async def test_a_listing_limit_is_1_to_1000(env: Env) -> None:
    for limit in (0, 1001):
        with pytest.raises(ValueError):
            await env.store.list("p/a/", limit=limit)


@pytest.mark.parametrize("cursor", ["", "not a cursor", "%%%", "\u00e9t\u00e9", "AAAA"])
async def test_a_cursor_the_store_never_gave_is_refused(env: Env, cursor: str) -> None:
    if env.kind == "s3" and cursor:
        pytest.skip("S3 checks its own tokens (InvalidArgument); moto's server fails on unknown ones with a 500")
    await put(env.store, "p/a/k", b"x")
    with pytest.raises(BadCursor):
        await env.store.list("p/a/", cursor=cursor)


async def test_usage_and_delete_prefix_count_only_what_is_under_the_prefix(env: Env) -> None:
    for key in KEYS:
        await put(env.store, key, key.encode())
    under = [k for k in KEYS if k.startswith("p/a/")]
    assert await env.store.usage("p/a/") == (sum(len(k.encode()) for k in under), len(under))
    assert await env.store.usage("p/b/") == (0, 0)
    assert await env.store.delete_prefix("p/a/") == len(under)
    assert await env.store.usage("p/a/") == (0, 0)
    assert await env.store.list("p/a/", delimiter="/") == (await env.store.list("p/a/"))
    assert [o.key for o in (await env.store.list("p/")).objects] == ["p/other"]
    assert await env.store.delete_prefix("p/a/") == 0


async def test_delete_prefix_deletes_more_than_a_batch(env: Env) -> None:
    """S3 deletes 1000 keys at a time."""
    if env.kind == "s3":
        s3 = client(env.moto_url)
        for i in range(1003):
            s3.put_object(Bucket=env.bucket, Key=f"p/many/{i:04}", Body=b"x")
    else:
        for i in range(1003):
            await put(env.store, f"p/many/{i:04}", b"x")
    await put(env.store, "p/kept/k", b"x")
    assert await env.store.usage("p/many/") == (1003, 1003)
    assert await env.store.delete_prefix("p/many/") == 1003
    assert await env.store.usage("p/") == (1, 1)


# --- hostile keys ---

CRAFTED = ["../x", "a/../../b", "..", ".", "%2F..%2Fescape", "..%2f..%2fetc", "/abs", "a//b", "trailing/", "é/ü/😀",
           "sp ace\ttab", "a\\b\\..\\c", "k" * 1020, "é" * 300 + "/z", "\u202eevil", "x/" * 200 + "deep"]


async def test_crafted_keys_round_trip_and_stay_inside_their_prefix(env: Env) -> None:
    whole = [f"p/a/{k}" for k in CRAFTED]
    assert all(len(k.encode()) <= 1024 for k in whole)
    await put(env.store, "p/b/secret", b"b's")
    for key in whole:
        info = await env.store.put(key, body(key.encode()), max_bytes=2048, content_type="text/plain")
        assert info.key == key
    for key in whole:
        assert await get_bytes(env.store, key) == key.encode(), key
        head = await env.store.head(key)
        assert head is not None and head.key == key
    # No key reached another project's objects, nor anything outside the store.
    assert await get_bytes(env.store, "p/b/secret") == b"b's"
    assert [o.key for o in (await env.store.list("p/b/")).objects] == ["p/b/secret"]
    assert await env.store.usage("p/b/") == (3, 1)
    assert [o.key for o in (await env.store.list("p/a/")).objects] == expected(whole, "p/a/", None)[0]
    assert (await env.store.list("p/", delimiter="/")).prefixes == ["p/a/", "p/b/"]
    assert await env.store.list("p/a/../b/") == await env.store.list("p/nothing/")
    if env.kind == "s3":
        assert env.stored() == sorted([*whole, "p/b/secret"])
    else:
        # Under the store's directory, one file per object (and the segments of long directory names).
        files = [path for path in env.stored() if not path.endswith("/.segment")]
        assert all(path.startswith("data/objects/d") for path in files) and len(files) == len(whole) + 1, files
    assert await env.store.delete_prefix("p/a/") == len(whole)
    assert [o.key for o in (await env.store.list("")).objects] == ["p/b/secret"]


async def test_a_key_of_1024_bytes_is_the_longest(env: Env) -> None:
    key = "p/a/" + "é" * 510  # 4 + 1020 bytes
    await put(env.store, key, b"longest")
    assert await get_bytes(env.store, key) == b"longest"
    for bad in (key + "x", ""):
        with pytest.raises(ValueError):
            await env.store.put(bad, body(b"x"), max_bytes=10)


# --- streaming ---

async def chunked(total: int, size: int) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        yield bytes([sent // size % 251]) * n
        sent += n


async def test_a_large_body_streams_both_ways_in_bounded_memory(env: Env) -> None:
    total = 48 * MiB
    digest = hashlib.md5()
    async for chunk in chunked(total, 64 * 1024):
        digest.update(chunk)
    assert await env.store.head("p/a/big.bin") is None  # the S3 client is made before memory is traced
    tracemalloc.start()
    try:
        info = await env.store.put("p/a/big.bin", chunked(total, 64 * 1024), max_bytes=total)
        _, put_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        got = await env.store.get("p/a/big.bin")
        read_back = hashlib.md5()
        sizes = []
        async for chunk in got.chunks:
            read_back.update(chunk)
            sizes.append(len(chunk))
        _, get_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.size == total and sum(sizes) == total and read_back.hexdigest() == digest.hexdigest()
    assert len(sizes) > 4 and max(sizes) <= 8 * MiB
    # A few parts or batches at a time, never the body: what a put and a get held at their peak.
    assert put_peak < 30 * MiB, f"put peak {put_peak:,} bytes for {total:,}"
    assert get_peak < 12 * MiB, f"get peak {get_peak:,} bytes for {total:,}"
    ranged = await env.store.get("p/a/big.bin", start=total - 70 * 1024 - 3, end=total - 1)
    assert await read(ranged) == b"".join([chunk async for chunk in chunked(total, 64 * 1024)])[total - 70 * 1024 - 3:]


async def test_closing_a_body_early_releases_it(env: Env) -> None:
    await env.store.put("p/a/big.bin", chunked(4 * MiB, MiB), max_bytes=4 * MiB)
    got = await env.store.get("p/a/big.bin")
    first = await anext(got.chunks)
    assert first
    await got.chunks.aclose()  # type: ignore[attr-defined]
    if env.kind == "files":
        path = str(env.root / "data" / "objects" / "dp" / "da" / "fbig.bin")
        assert not [fd for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == path]
    assert await env.store.delete("p/a/big.bin") is not None
