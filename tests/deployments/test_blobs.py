"""The blob stores behind the port: files under the data dir, and S3 (moto's server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.adapters.blobs import build_blob_store
from svc.adapters.blobs.files import FileBlobStore
from svc.adapters.blobs.port import BlobMissing, BlobStore
from svc.adapters.blobs.s3 import S3BlobStore
from svc.settings import Settings
from tests.support.config import configured
from tests.support.s3 import object_keys, s3_settings

KEY = "bundles/sha256/" + "ab" * 32 + ".tar.gz"


@pytest.fixture(params=["files", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    settings = Settings(data_dir=tmp_path / "data")
    if request.param == "s3":
        moto_url = request.getfixturevalue("moto_url")
        settings = s3_settings(settings, moto_url, request.getfixturevalue("bucket"))
    return build_blob_store(configured(settings))


async def test_put_get_exists_delete(store: BlobStore, tmp_path: Path) -> None:
    source = tmp_path / "bundle.tar.gz"
    source.write_bytes(b"bundle bytes " * 1000)
    out = tmp_path / "out.tar.gz"
    assert not await store.exists(KEY)
    with pytest.raises(BlobMissing):
        await store.get_to_file(KEY, out)
    assert not out.exists()

    await store.put_file(KEY, source)
    await store.put_file(KEY, source)  # content-addressed: idempotent
    assert await store.exists(KEY)
    await store.get_to_file(KEY, out)
    assert out.read_bytes() == source.read_bytes()
    # The source may go away: the store has its own copy.
    source.unlink()
    out.unlink()
    await store.get_to_file(KEY, out)
    assert out.read_bytes() == b"bundle bytes " * 1000
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("get-")] == []

    await store.delete(KEY)
    await store.delete(KEY)
    assert not await store.exists(KEY)
    for bad in ("", "/abs/key", "a/../b", "../x"):
        with pytest.raises(ValueError):
            await store.exists(bad)


async def test_file_store_layout_and_no_temporary_files(tmp_path: Path) -> None:
    store = build_blob_store(configured(Settings(data_dir=tmp_path / "data")))
    assert isinstance(store, FileBlobStore)
    source = tmp_path / "b"
    source.write_bytes(b"x")
    await store.put_file(KEY, source)
    root = tmp_path / "data" / "blobs"
    assert (root / KEY).read_bytes() == b"x"
    assert list((root / ".tmp").iterdir()) == []


async def test_s3_store_keys_carry_the_prefix(moto_url: str, bucket: str, tmp_path: Path) -> None:
    store = build_blob_store(s3_settings(Settings(data_dir=tmp_path), moto_url, bucket, prefix="p/"))
    assert isinstance(store, S3BlobStore) and bucket in store.description
    source = tmp_path / "b"
    source.write_bytes(b"x")
    await store.put_file(KEY, source)
    assert object_keys(moto_url, bucket) == ["p/" + KEY]


def test_unknown_store_or_missing_bucket_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="files"):
        build_blob_store(configured(Settings(data_dir=tmp_path), blob_store="ftp"))
    with pytest.raises(ValueError, match="BUCKET"):
        build_blob_store(configured(Settings(data_dir=tmp_path), blob_store="s3"))
