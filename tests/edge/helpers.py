"""Projects and deployments for edge tests, and an HTTP client that speaks to nginx by Host.

Deployments are made as the deployments area stores them: a gzipped tar whose digest names it,
unpacked once into artifacts.site_dir(ctx, digest), a Deployment row, the live pointer moved and
the edge generation bumped in the same transaction."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import tarfile
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route as HttpRoute

from svc.context import AppContext
from svc.domains.deployments import artifacts
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Deployment, EdgeState, Project
from tests.support.api import User


async def _bump_edge(session: AsyncSession) -> None:
    """Move the edge's counter as a change made by another process would: the edge under test
    sees it on its poll (these helpers do not converge it themselves)."""
    await session.execute(update(EdgeState).where(EdgeState.id == 1).values(generation=EdgeState.generation + 1))



def bundle(files: dict[str, bytes], manifest: dict[str, Any] | None = None) -> bytes:
    """A gzipped tar as `svc deploy` makes it: svc.json at the root, the site under assets/."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        entries = {"svc.json": json.dumps(manifest or {}).encode()}
        entries |= {f"assets/{name}": data for name, data in files.items()}
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def unpack(ctx: AppContext, body: bytes) -> str:
    """Unpack a bundle into its site dir (complete or absent: beside it, then renamed); its digest."""
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    dest = artifacts.site_dir(ctx, digest)
    if dest.exists():
        return digest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".unpack-"))
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        tar.extractall(tmp, filter="data")
    tmp.rename(dest)
    return digest


@dataclass
class Site:
    project_id: str
    name: str
    org: str
    host: str


async def create_project(user: User, name: str) -> Site:
    r = await user.client.post(f"/v1/orgs/{user.personal_org}/projects", json={"name": name})
    assert r.status_code == 201, r.text
    body = r.json()
    return Site(project_id=body["id"], name=name, org=user.personal_org, host=body["hostname"])


async def deploy(ctx: AppContext, site: Site, files: dict[str, bytes], *, unpack_site: bool = True) -> int:
    """A new live deployment of `files`; returns its version."""
    body = bundle(files)
    digest = unpack(ctx, body) if unpack_site else "sha256:" + hashlib.sha256(body).hexdigest()
    async with ctx.db.transaction() as session:
        project = (await session.execute(select(Project).where(Project.id == site.project_id))).scalar_one()
        version = project.next_version
        row = Deployment(id=new_id("dpl"), project_id=project.id, version=version, digest=digest,
                         size_bytes=len(body), unpacked_bytes=sum(len(v) for v in files.values()),
                         file_count=len(files), manifest={}, created_at=utcnow(), uploader_id=None,
                         git_commit=None, git_message=None, git_branch=None, git_dirty=None)
        session.add(row)
        project.next_version = version + 1
        project.live_deployment_id = row.id
        await _bump_edge(session)
    return version


async def rollback(ctx: AppContext, site: Site, version: int) -> None:
    async with ctx.db.transaction() as session:
        project = (await session.execute(select(Project).where(Project.id == site.project_id))).scalar_one()
        dep = (await session.execute(select(Deployment).where(Deployment.project_id == project.id,
                                                              Deployment.version == version))).scalar_one()
        project.live_deployment_id = dep.id
        await _bump_edge(session)


async def set_access(ctx: AppContext, site: Site, mode: str) -> None:
    """A policy change as the access area makes it: new mode, generation + 1, edge bumped."""
    async with ctx.db.transaction() as session:
        project = (await session.execute(select(Project).where(Project.id == site.project_id))).scalar_one()
        project.access_mode = mode
        project.access_generation += 1
        await _bump_edge(session)


class EdgeHttp:
    """Requests to the edge on 127.0.0.1:<port> naming the site by its Host header."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10)
        # A new connection per request (after a reload, new connections go to the new workers).
        self.fresh = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10,
                                       limits=httpx.Limits(max_keepalive_connections=0))

    async def get(self, host: str, path: str = "/", **kw: Any) -> httpx.Response:
        headers = {"host": host} | dict(kw.pop("headers", {}))
        return await self.client.get(path, headers=headers, **kw)

    async def request(self, method: str, host: str, path: str = "/", **kw: Any) -> httpx.Response:
        headers = {"host": host} | dict(kw.pop("headers", {}))
        return await self.client.request(method, path, headers=headers, **kw)

    async def fresh_get(self, host: str, path: str = "/") -> httpx.Response:
        return await self.fresh.get(path, headers={"host": host})

    async def aclose(self) -> None:
        await self.client.aclose()
        await self.fresh.aclose()


# --- a fake of the API's edge endpoints (docs/edge.md), so these tests do not depend on the access area ---

GOOD_COOKIE = "svc_access=good"
REFUSED_COOKIE = "svc_access=refused"
BYPASS = "svc_byp_fake-bypass-secret-3f9c1d"


def access_values(cookie_header: str | None) -> list[str]:
    """Every svc_access value of a Cookie header, as the real check reads them."""
    values = []
    for part in (cookie_header or "").split(";"):
        name, eq, value = part.strip().partition("=")
        if eq and name == "svc_access" and value:
            values.append(value)
    return values


@dataclass
class FakeCheck:
    url: str = ""
    checks: list[dict[str, str | None]] = field(default_factory=list)
    proxied: list[dict[str, str | None]] = field(default_factory=list)
    # The headers of every request the fake was sent (checks and pages), names in lower case.
    headers: list[dict[str, str]] = field(default_factory=list)


def _check_app(state: FakeCheck) -> Starlette:
    async def check(request: Request) -> Response:
        h = request.headers
        state.headers.append(dict(h))
        state.checks.append({"host": h.get("x-svc-host"), "uri": h.get("x-svc-uri"), "cookie": h.get("cookie"),
                             "bypass": h.get("svc-access-bypass"), "method": request.method})
        if "good" in access_values(h.get("cookie")) or h.get("svc-access-bypass") == BYPASS:
            return Response(status_code=204, headers={"Cache-Control": "no-store"})
        if "refused" in access_values(h.get("cookie")):  # as the API's 403, e.g. host_not_routed
            return Response(status_code=403, headers={"Cache-Control": "no-store"})
        login = f"http://svc.test/access/authorize?to={h.get('x-svc-host')}&next={h.get('x-svc-uri')}"
        if "no-login-url" in (h.get("x-svc-uri") or ""):  # a 401 that names no login page
            return Response(status_code=401, headers={"Cache-Control": "no-store"})
        return Response(status_code=401, headers={"X-Svc-Login": login, "Cache-Control": "no-store"})

    async def edge_path(request: Request) -> Response:
        state.headers.append(dict(request.headers))
        state.proxied.append({"path": request.url.path, "query": request.url.query,
                              "host": request.headers.get("x-svc-host"), "method": request.method})
        # As the API's pages do.
        return PlainTextResponse(f"svc page {request.url.path} for {request.headers.get('x-svc-host')}",
                                 headers={"Cache-Control": "no-store"})

    return Starlette(routes=[HttpRoute("/v1/edge/check", check),
                             HttpRoute("/v1/edge/{rest:path}", edge_path, methods=["GET", "POST"])])


@contextlib.asynccontextmanager
async def fake_check_server() -> AsyncIterator[FakeCheck]:
    state = FakeCheck()
    server = uvicorn.Server(uvicorn.Config(_check_app(state), host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="off"))
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    state.url = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        server.should_exit = True
        await task
