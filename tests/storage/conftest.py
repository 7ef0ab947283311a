"""The storage area's fixtures: a svc with object storage on its files backend (SVC_DATA_DIR/objects),
or on a real S3 server (moto), with plan quotas small enough to pass in a test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import SecretStr
from sqlalchemy import select

from svc.models import Org, Project
from svc.settings import Config, Settings
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, create_bucket, moto_server

FREE_QUOTA = 64 * 1024
PRO_QUOTA = 4 * 1024 * 1024


def quotas(settings: Settings | Config, **values: object) -> Config:
    return configured(settings, free_storage_bytes=FREE_QUOTA, pro_storage_bytes=PRO_QUOTA, **values)


@pytest.fixture
async def storage_svc(settings: Settings) -> AsyncIterator[Svc]:
    """svc with the files backend (the default); its jobs run when a test runs them."""
    async with running_svc(quotas(settings), run_workers=False) as running:
        yield running


@pytest.fixture(scope="session")
def moto_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One moto S3 server for the session (any_svc makes a bucket for each test)."""
    with moto_server(tmp_path_factory.mktemp("storage-moto")) as url:
        yield url


def s3_config(settings: Settings, moto_url: str, bucket: str) -> Config:
    return quotas(settings, storage_backend="s3", storage_s3_bucket=bucket, s3_endpoint_url=moto_url,
                  s3_bucket=bucket, s3_access_key_id=ACCESS_KEY, s3_secret_access_key=SecretStr(SECRET_KEY))


@pytest.fixture(params=["files", "s3"])
async def any_svc(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[Svc]:
    """The storage svc on each backend in turn (S3: a bucket of its own on the session's moto)."""
    if request.param == "files":
        config = quotas(settings)
    else:
        moto = request.getfixturevalue("moto_url")
        name = f"objects-{uuid.uuid4().hex[:12]}"
        create_bucket(moto, name)
        config = s3_config(settings, moto, name)
    async with running_svc(config, run_workers=False) as running:
        yield running


async def set_plan(svc: Svc, org: str, plan: str) -> None:
    async with svc.ctx.db.transaction(write=True) as s:
        (await s.scalars(select(Org).where(Org.slug == org))).one().plan = plan


async def project_id(svc: Svc, name: str) -> str:
    async with svc.ctx.db.transaction(write=False) as s:
        return str((await s.scalars(select(Project.id).where(Project.name == name))).one())


@pytest.fixture
async def worker_svc(settings: Settings) -> AsyncIterator[Svc]:
    """svc with the files backend and its job worker running (a project's teardown runs by itself)."""
    async with running_svc(quotas(settings)) as running:
        yield running
