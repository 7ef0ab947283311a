"""A running svc (real app, real store) with its edge: a real nginx on a free port, started by the test.

Most edge tests run on SQLite (the edge reads the store the same way on both); the routing-table
test takes the `svc` fixture and runs on both stores. The edge's API address is a fake of the
/v1/edge/* endpoints (tests/edge/helpers.py) so protected-host tests count the checks nginx makes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from svc.adapters.edge.settings import EdgeSettings
from svc.context import AppContext
from svc.edge import NginxEdge
from svc.edge.component import EdgeRouting
from svc.settings import Config, Settings
from svc.supervisor import find_binary
from tests.edge.helpers import EdgeHttp, FakeCheck, fake_check_server
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.ports import free_port

NGINX = find_binary("nginx")
pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (make test installs it)")


@dataclass
class Running:
    svc: Svc
    edge: NginxEdge
    http: EdgeHttp
    check: FakeCheck

    @property
    def ctx(self) -> AppContext:
        return self.svc.ctx


def edge_settings(data_dir: Path, database_url: str | None = None, **extra: object) -> Config:
    values: dict[str, object] = dict(
        data_dir=data_dir, database_url=database_url, enable_dev_auth=True, public_url="http://svc.test",
        job_poll_seconds=0.05, edge_port=free_port(), edge_converge_seconds=0.1,
        edge_check_cache_seconds=60, free_project_limit=10)
    return configured(Settings(), **(values | extra))


@asynccontextmanager
async def started_edge(svc: Svc, check: FakeCheck) -> AsyncIterator[Running]:
    assert NGINX is not None
    edge = NginxEdge(svc.ctx.config, EdgeRouting(svc.ctx), api_url=check.url, binary=NGINX)
    await edge.start()
    svc.ctx.edge = edge
    http = EdgeHttp(svc.ctx.settings_of(EdgeSettings).edge_port)
    try:
        assert edge.process.running, edge.process.last_log()
        yield Running(svc=svc, edge=edge, http=http, check=check)
    finally:
        svc.ctx.edge = None
        await http.aclose()
        await edge.stop()


@pytest.fixture
async def check() -> AsyncIterator[FakeCheck]:
    async with fake_check_server() as state:
        yield state


@pytest.fixture
async def running(tmp_path: Path, check: FakeCheck) -> AsyncIterator[Running]:
    """SQLite store, svc and its edge."""
    async with running_svc(edge_settings(tmp_path / "data")) as svc, started_edge(svc, check) as r:
        yield r


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    """For tests that take `svc` (both stores): the edge settings, a free edge port included."""
    return edge_settings(tmp_path / "data", database_url)
