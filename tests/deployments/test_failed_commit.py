"""A deploy whose transaction fails leaves nothing behind: no unpacked site appears, its temporary
files go at once, and its unit of work has the bundle it added to the blob store (files or S3)
collected after a grace period, unless a committed deployment uses it by then. The commit is made
to fail on purpose, after everything else succeeded."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import event, select, update
from sqlalchemy.orm import Session

from svc.domains.deployments.kinds import DeploymentJob
from svc.kit.clock import utcnow
from svc.models import Deployment, Job
from svc.settings import Settings
from tests.deployments.conftest import Env, make_env
from tests.support import bundles
from tests.support.api import Svc, assert_error, running_svc
from tests.support.s3 import object_keys, s3_settings
from tests.support.smtp import eventually


async def collect_now(svc: Svc) -> None:
    """As if the grace period had passed: the collection jobs are due, and the worker runs them."""
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Job).where(Job.kind == DeploymentJob.artifact_collect).values(run_at=utcnow()))

    async def collected() -> bool:
        async with svc.ctx.db.transaction(write=False) as s:
            statuses = (await s.scalars(select(Job.status).where(Job.kind == DeploymentJob.artifact_collect))).all()
        return bool(statuses) and set(statuses) == {"done"}

    await eventually(collected, what="the artifact.collect jobs")


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
    """The commit of the next transaction that records a deployment fails (as a full disk or a
    lost connection would); other commits, such as the one that schedules the clean-up, go through."""
    failed = []

    def note(session: Session, _context: Any, _instances: Any) -> None:
        if any(isinstance(o, Deployment) for o in session.new):
            session.info["records_a_deployment"] = True

    def refuse(session: Session) -> None:
        if not failed and session.info.pop("records_a_deployment", False):
            failed.append(True)
            raise RuntimeError("the commit failed (on purpose)")

    session_class: Any = svc.ctx.db.session_class
    event.listen(session_class, "before_flush", note)
    event.listen(session_class, "before_commit", refuse)
    try:
        yield
    finally:
        event.remove(session_class, "before_flush", note)
        event.remove(session_class, "before_commit", refuse)
    assert failed, "no commit was attempted"


async def test_a_failed_commit_leaves_no_artifact_on_disk(env: Env) -> None:
    body = bundles.site()
    async with client_seeing_500s(env) as client:
        with failing_commits(env.svc):
            assert_error(await env.deploy(body, client=client), 500, "internal")
    assert await env.rows() == 0
    assert {p.split("/")[0] for p in _files(env)} == {"blobs"}, "no site or temporary file is left"
    await collect_now(env.svc)
    assert _files(env) == set(), "nor the bundle, once collected"
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
        assert _files(env) == set()
        await collect_now(svc)
        assert object_keys(moto_url, bucket) == []
        assert (await env.deploy(bundles.site())).status_code == 201
        assert len(object_keys(moto_url, bucket)) == 1
