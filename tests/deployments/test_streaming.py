"""The body is streamed: never held whole in memory, bounds enforced while it arrives."""

from __future__ import annotations

import asyncio
import hashlib
import tracemalloc
from collections.abc import AsyncIterator

import pytest

from svc.domains.deployments import service as deployments_service
from svc.domains.deployments.artifacts import site_dir
from svc.settings import Settings
from tests.deployments.conftest import Env, make_env
from tests.support import bundles
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured


async def test_a_40_mb_bundle_is_streamed_not_held_in_memory(env: Env) -> None:
    files, size = 40, 1024 * 1024
    digest = hashlib.sha256()
    for chunk in bundles.big_site(files, size):
        digest.update(chunk)
    stream = bundles.Stream(bundles.big_site(files, size))
    tracemalloc.start()
    try:
        r = await env.deploy(stream.aiter())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.status_code == 201, r.text
    assert stream.sent > 40 * size
    # Python's peak while 40 MB went through: a few chunks, not the body.
    assert peak < 10 * 1024 * 1024, f"peak {peak:,} bytes for a {stream.sent:,} byte body"
    assert r.json()["digest"] == f"sha256:{digest.hexdigest()}" and r.json()["sizeBytes"] == stream.sent
    assert r.json()["fileCount"] == files + 1
    site = site_dir(env.svc.ctx, r.json()["digest"])
    assert (site / "assets" / "f0039.bin").stat().st_size == size


@pytest.fixture
async def tiny(settings: Settings) -> AsyncIterator[Svc]:
    async with running_svc(configured(settings, max_bundle_bytes=1024 * 1024)) as svc:
        yield svc


async def test_413_arrives_while_the_client_is_still_sending(tiny: Svc) -> None:
    env = await make_env(tiny)
    before = env.files()
    stream = bundles.Stream(bundles.big_site(10, 1024 * 1024))  # about 10 MB, over the 1 MiB bound
    body = assert_error(await env.deploy(stream.aiter()), 413, "bundle_too_large")
    assert body["details"] == {"limit": "compressed", "max": 1024 * 1024}
    assert stream.sent < 2 * 1024 * 1024, stream.sent
    assert env.files() == before and await env.rows() == 0


async def test_a_content_length_over_the_bound_is_refused_before_reading(tiny: Svc) -> None:
    env = await make_env(tiny)
    before = env.files()
    stream = bundles.Stream(bundles.big_site(3, 1024 * 1024))
    r = await env.deploy(stream.aiter(), headers={"content-length": str(3 * 1024 * 1024 + 5000)})
    assert_error(r, 413, "bundle_too_large")
    assert stream.sent == 0
    assert env.files() == before and await env.rows() == 0


async def test_bundles_over_the_json_body_cap_are_accepted(env: Env) -> None:
    # A 3 MB body with a Content-Length: the API's 1 MiB cap for JSON bodies does not apply.
    body = b"".join(bundles.big_site(3, 1024 * 1024))
    assert len(body) > 3 * 1024 * 1024
    r = await env.deploy(body)
    assert r.status_code == 201, r.text
    assert r.json()["sizeBytes"] == len(body)
    # Other routes keep the cap.
    big_json = b'{"version": 1, "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    r = await env.owner.client.post(f"{env.base}/rollback", content=big_json,
                                    headers={"content-type": "application/json"})
    assert_error(r, 400, "bad_request")


async def test_a_stalled_upload_is_cut_off_and_leaves_nothing(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deployments_service, "IDLE_SECONDS", 0.3)
    before = env.files()
    good = bundles.site()

    async def stalls() -> AsyncIterator[bytes]:
        yield good[:20]
        await asyncio.sleep(1.5)
        yield good[20:]

    body = assert_error(await env.deploy(stalls()), 400, "bad_bundle")
    assert body["details"]["reason"] == "truncated"
    assert env.files() == before and await env.rows() == 0
