"""The object store as a component: which backend the settings build, and the sweep at start."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from svc.adapters.objects import build_object_store
from svc.adapters.objects.component import COMPONENT
from svc.adapters.objects.files import FileObjectStore
from svc.adapters.objects.s3 import S3ObjectStore
from svc.settings import Settings
from svc.supervisor.component import Launch
from tests.support.config import configured
from tests.support.s3 import s3_settings


def test_files_under_the_data_dir_by_default(tmp_path: Path) -> None:
    store = build_object_store(configured(Settings(data_dir=tmp_path)))
    assert isinstance(store, FileObjectStore) and store.root == tmp_path / "objects"


def test_s3_takes_the_blob_stores_s3_settings_and_its_own_bucket_when_set(tmp_path: Path) -> None:
    blobs = s3_settings(Settings(data_dir=tmp_path), "http://127.0.0.1:9", "blobs-bucket", prefix="svc/")
    shared = build_object_store(configured(blobs, storage_backend="s3"))
    assert isinstance(shared, S3ObjectStore)
    # The blobs' bucket, its objects at the root (the blobs are under svc/, the projects' under p/).
    assert (shared.bucket, shared.prefix, shared.endpoint_url) == ("blobs-bucket", "", "http://127.0.0.1:9")
    own = build_object_store(configured(blobs, storage_backend="s3", storage_s3_bucket="objects-bucket"))
    assert isinstance(own, S3ObjectStore) and own.bucket == "objects-bucket"
    assert "secret" not in own.description.lower() and "testing" not in own.description


def test_s3_without_a_bucket_or_an_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SVC_STORAGE_S3_BUCKET"):
        build_object_store(configured(Settings(data_dir=tmp_path), storage_backend="s3", s3_bucket=None))
    with pytest.raises(ValueError, match="'files' or 's3'"):
        build_object_store(configured(Settings(data_dir=tmp_path), storage_backend="disk"))


async def test_the_serving_process_sweeps_what_killed_writers_left(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path / "objects")
    (tmp_path / "objects" / ".tmp").mkdir(parents=True)
    dead = tmp_path / "objects" / ".tmp" / "put-4194999-0badc0de-0123456789abcdef"  # past Linux's highest pid
    dead.write_bytes(b"half an object")
    ctx = SimpleNamespace(adapters=SimpleNamespace(objects=store))
    assert COMPONENT.start is not None
    async with contextlib.AsyncExitStack() as running:
        await running.enter_async_context(COMPONENT.start(ctx, Launch(api_url="http://127.0.0.1:1")))
        assert not dead.exists()
