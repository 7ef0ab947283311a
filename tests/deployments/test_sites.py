"""Artifacts on both blob stores: a deploy against S3 (moto's server), and ensure_site bringing a
site back from the blob store when this process's data dir lacks it (a wiped disk, a second
process), checking the digest; a damaged or missing bundle is an error that leaves nothing."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from svc.adapters.blobs.port import BlobMissing
from svc.domains.deployments.artifacts import blob_key, ensure_site, site_dir
from svc.domains.deployments.errors import ArtifactCorrupt
from svc.settings import Settings
from tests.deployments.conftest import Env, make_env
from tests.support import bundles
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.s3 import client, object_keys, s3_settings

FILES = {"assets/index.html": b"<h1>from the store</h1>", "assets/js/app.js": b"console.log(1)"}


def _tree(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}


@pytest.fixture
async def s3_svc(settings: Settings, moto_url: str, bucket: str) -> AsyncIterator[Svc]:
    async with running_svc(s3_settings(settings, moto_url, bucket)) as svc:
        yield svc


async def test_deploy_on_the_s3_store_and_refetch_after_the_sites_dir_is_gone(
        s3_svc: Svc, moto_url: str, bucket: str) -> None:
    env = await make_env(s3_svc)
    body = bundles.site(FILES)
    one = (await env.deploy(body)).json()
    two = (await env.deploy(body)).json()
    assert (one["version"], two["version"]) == (1, 2) and one["digest"] == two["digest"]
    hexdigest = one["digest"].removeprefix("sha256:")
    assert object_keys(moto_url, bucket) == [f"svc/bundles/sha256/{hexdigest}.tar.gz"]
    stored = client(moto_url).get_object(Bucket=bucket, Key=f"svc/bundles/sha256/{hexdigest}.tar.gz")
    assert stored["Body"].read() == body
    assert not (env.data_dir / "blobs").exists()  # nothing kept locally but the unpacked site
    assert (await env.owner.client.post(f"{env.base}/rollback", json={"version": 1})).status_code == 200

    site = site_dir(env.svc.ctx, one["digest"])
    before = _tree(site)
    shutil.rmtree(env.data_dir / "sites")
    assert await ensure_site(env.svc.ctx, one["digest"]) == site
    assert _tree(site) == before and before["assets/index.html"] == FILES["assets/index.html"]
    assert await ensure_site(env.svc.ctx, one["digest"]) == site  # present: nothing to do
    assert sorted(p.name for p in (env.data_dir / "sites").iterdir()) == [hexdigest]
    assert list((env.data_dir / "tmp").iterdir()) == []


async def test_a_second_process_with_its_own_data_dir_gets_the_site(
        settings: Settings, moto_url: str, bucket: str, tmp_path: Path) -> None:
    shared = s3_settings(settings, moto_url, bucket)
    async with running_svc(shared) as first:
        env = await make_env(first)
        digest = (await env.deploy(bundles.site(FILES))).json()["digest"]
    # Another disk (on SQLite also another state store: ensure_site needs only the blob store).
    async with running_svc(configured(shared, data_dir=tmp_path / "second")) as second:
        path = await ensure_site(second.ctx, digest)
        assert path.is_relative_to(tmp_path / "second")
        assert {k: v for k, v in _tree(path).items() if k != "svc.json"} == FILES


async def test_ensure_site_on_the_file_store_after_a_wipe(env: Env) -> None:
    digest = (await env.deploy(bundles.site(FILES))).json()["digest"]
    site = site_dir(env.svc.ctx, digest)
    shutil.rmtree(site)
    assert await ensure_site(env.svc.ctx, digest) == site
    assert _tree(site)["assets/js/app.js"] == FILES["assets/js/app.js"]


async def test_a_damaged_or_missing_bundle_is_an_error_and_leaves_nothing(env: Env) -> None:
    digest = (await env.deploy(bundles.site(FILES))).json()["digest"]
    shutil.rmtree(site_dir(env.svc.ctx, digest))
    blob = env.data_dir / "blobs" / blob_key(digest)
    good = blob.read_bytes()
    before = env.files()
    # Another valid bundle under this digest's key: it unpacks, but does not hash to the digest.
    blob.write_bytes(bundles.site({"assets/index.html": b"swapped"}))
    with pytest.raises(ArtifactCorrupt, match="digest"):
        await ensure_site(env.svc.ctx, digest)
    blob.write_bytes(good[: len(good) // 2])
    with pytest.raises(ArtifactCorrupt, match="unpack"):
        await ensure_site(env.svc.ctx, digest)
    assert env.files() == before
    blob.unlink()
    with pytest.raises(BlobMissing):
        await ensure_site(env.svc.ctx, digest)
    assert env.files() == before - {f"blobs/{blob_key(digest)}"}
    assert not site_dir(env.svc.ctx, digest).exists()


async def test_an_unavailable_blob_store_is_a_503_that_leaves_nothing(settings: Settings, moto_url: str) -> None:
    async with running_svc(s3_settings(settings, moto_url, "no-such-bucket")) as svc:
        env = await make_env(svc)
        before = env.files()
        assert_error(await env.deploy(bundles.site()), 503, "unavailable")
        assert env.files() == before and await env.rows() == 0


def test_each_apps_sites_are_stamped_from_its_own_stamps(tmp_path: Path) -> None:
    """Each unpacked site gets an mtime second of its own (nginx's ETag is the mtime and the size),
    drawn from its app's stamps (ctx.state_of): another app in the process has its own."""
    from typing import cast

    from svc.adapters.mail.eml import EmlDirectorySender
    from svc.context import Adapters, AppContext
    from svc.db import Database
    from svc.domains.deployments.artifacts import SiteStamps, place_site

    one, two = (AppContext(settings=Settings(data_dir=tmp_path / name), db=cast(Database, None),
                           adapters=Adapters(mail=EmlDirectorySender(tmp_path / name / "mail")))
                for name in ("one", "two"))
    stamps = one.state_of(SiteStamps)
    assert one.state_of(SiteStamps) is stamps and two.state_of(SiteStamps) is not stamps
    placed = []
    for version in range(3):
        staging = tmp_path / f"staging-{version}"
        staging.mkdir()
        (staging / "index.html").write_bytes(b"same size")
        assert place_site(staging, ["index.html"], tmp_path / f"site-{version}", stamps)
        placed.append(int((tmp_path / f"site-{version}" / "index.html").stat().st_mtime))
    assert placed == sorted(set(placed)), "two sites share an mtime second"
