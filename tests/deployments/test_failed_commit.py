"""A deploy whose transaction fails leaves nothing behind: its unit of work removes the bundle it
added to the blob store (files or S3) and no unpacked site appears; a bundle that a committed
deployment uses stays. The commit is made to fail on purpose, after everything else succeeded."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import event
from sqlalchemy.orm import Session

from svc.settings import Settings
from tests.deployments import bundles
from tests.deployments.conftest import Env, make_env
from tests.support.api import Svc, assert_error, running_svc
from tests.support.s3 import object_keys, s3_settings


def _files(env: Env) -> set[str]:
    """Files (not directories) the data dir holds besides the store's own."""
    return {p for p in env.files() if (env.data_dir / p).is_file()}


def client_seeing_500s(env: Env) -> httpx.AsyncClient:
    """The owner's client, answered with the 500 a real server sends (the in-process transport
    would raise the server's exception instead)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=env.svc.app, raise_app_exceptions=False),
                             base_url="http://svc.test", headers={"authorization": f"Bearer {env.owner.token}"})


@contextmanager
def failing_commits(svc: Svc) -> Iterator[None]:
    """Every commit of this svc's store fails while inside (as a full disk or a lost connection would)."""

    def refuse(_session: Session) -> None:
        raise RuntimeError("the commit failed (on purpose)")

    session_class: Any = svc.ctx.db.session_class
    event.listen(session_class, "before_commit", refuse)
    try:
        yield
    finally:
        event.remove(session_class, "before_commit", refuse)


async def test_a_failed_commit_leaves_no_artifact_on_disk(env: Env) -> None:
    body = bundles.site()
    async with client_seeing_500s(env) as client:
        with failing_commits(env.svc):
            assert_error(await env.deploy(body, client=client), 500, "internal")
    assert await env.rows() == 0
    assert _files(env) == set(), "no bundle, site or temporary file is left"
    # The same upload works once the store does.
    assert (await env.deploy(body)).status_code == 201
    assert await env.rows() == 1


async def test_a_failed_commit_keeps_a_bundle_another_deployment_uses(env: Env) -> None:
    body = bundles.site()
    assert (await env.deploy(body)).status_code == 201
    kept = env.files()
    async with client_seeing_500s(env) as client:
        with failing_commits(env.svc):
            assert_error(await env.deploy(body, client=client), 500, "internal")
    assert await env.rows() == 1
    assert env.files() == kept
    live = await env.owner.client.get(f"{env.base}")
    assert live.json()["liveDeployment"]["version"] == 1


async def test_a_failed_commit_leaves_no_object_in_s3(settings: Settings, moto_url: str, bucket: str) -> None:
    async with running_svc(s3_settings(settings, moto_url, bucket)) as svc:
        env = await make_env(svc)
        async with client_seeing_500s(env) as client:
            with failing_commits(svc):
                assert_error(await env.deploy(bundles.site(), client=client), 500, "internal")
        assert await env.rows() == 0
        assert object_keys(moto_url, bucket) == []
        assert _files(env) == set()
        assert (await env.deploy(bundles.site())).status_code == 201
        assert len(object_keys(moto_url, bucket)) == 1
