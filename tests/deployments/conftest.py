from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from svc.models import Deployment
from tests.support.api import Svc, User
from tests.support.s3 import create_bucket, moto_server

# Files of the state store itself, which change with every request.
_STORE_FILES = ("svc.sqlite3", "svc.sqlite3-wal", "svc.sqlite3-shm", "secret.key", "svc.lock")
# Directories that hold artifacts (made on first use); what is inside them counts.
_CONTAINERS = ("sites", "tmp", "blobs", "blobs/.tmp")


@dataclass
class Env:
    svc: Svc
    owner: User
    org: str = "acme"
    project: str = "web"

    @property
    def base(self) -> str:
        return f"/v1/orgs/{self.org}/projects/{self.project}"

    @property
    def data_dir(self) -> Path:
        path: Path = self.svc.ctx.settings.data_dir
        return path

    async def deploy(self, body: Any, *, client: httpx.AsyncClient | None = None,
                     headers: dict[str, str] | None = None, content_type: str = "application/gzip") -> httpx.Response:
        h = {"content-type": content_type, **(headers or {})}
        return await (client or self.owner.client).post(f"{self.base}/deployments", content=body, headers=h)

    async def deployments(self, client: httpx.AsyncClient | None = None, **params: Any) -> dict[str, Any]:
        r = await (client or self.owner.client).get(f"{self.base}/deployments", params=params)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    async def rows(self) -> int:
        async with self.svc.ctx.db.transaction(write=False) as s:
            return int(await s.scalar(select(func.count()).select_from(Deployment)) or 0)

    def files(self) -> set[str]:
        """Every file and directory under the data dir, but the state store's own files, mail, the
        git node's (its hooks and repositories: tests/repos) and the (possibly empty) artifact
        directories themselves."""
        found = set()
        for p in self.data_dir.rglob("*"):
            rel = p.relative_to(self.data_dir).as_posix()
            if rel in _STORE_FILES or rel in _CONTAINERS or rel.startswith(("mail", "git")):
                continue
            found.add(rel)
        return found


async def make_env(svc: Svc, org: str = "acme", project: str = "web") -> Env:
    owner = await svc.login("alice")
    r = await owner.client.post("/v1/orgs", json={"slug": org, "name": "Acme"})
    assert r.status_code == 201, r.text
    r = await owner.client.post(f"/v1/orgs/{org}/projects", json={"name": project})
    assert r.status_code == 201, r.text
    return Env(svc=svc, owner=owner, org=org, project=project)


@pytest.fixture
async def env(svc: Svc) -> AsyncIterator[Env]:
    yield await make_env(svc)


@pytest.fixture(scope="session")
def moto_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One moto S3 server for the session; each test makes a bucket of its own."""
    with moto_server(tmp_path_factory.mktemp("moto")) as url:
        yield url


@pytest.fixture
def bucket(moto_url: str) -> str:
    name = f"svc-{uuid.uuid4().hex[:12]}"
    create_bucket(moto_url, name)
    return name
