"""The first project database on a fresh machine works on the first try, as root and as a plain
user: `svc serve` runs with umask 077 (everything it writes is its own), yet the directories the
private cluster's user must pass through are made passable, and the cluster's own stays private.

As root the cluster runs as the `postgres` user (PostgreSQL refuses root); as a plain user, as that
user. Each test runs only as the one it is about (the suite runs as root in CI)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from svc.adapters.database import PrivateNode, start_database
from svc.adapters.database.port import ProjectLimits
from svc.adapters.database.process import PrivateCluster, find_postgres
from svc.kit.files import PRIVATE_UMASK
from svc.kit.scram import verifier
from svc.settings import Settings
from tests.support import components
from tests.support.config import configured
from tests.support.serve import svc_serve

pytestmark = components.POSTGRES
LIMITS = ProjectLimits(connections=5, token_connections=1, statement_seconds=2, idle_transaction_seconds=5)
AS_ROOT = os.geteuid() == 0


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


@contextlib.contextmanager
def passable_tmp() -> Iterator[Path]:
    """A fresh directory the postgres user can pass through (pytest's own tmp is 0700)."""
    made = Path(tempfile.mkdtemp(prefix="svc-test-first-db-"))
    os.chmod(made, 0o755)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _rows(creds: dict[str, Any]) -> list[Any]:
    con = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                user=creds["user"], password=creds["password"], timeout=10)
    try:
        await con.execute("create table notes (body text)")
        await con.execute("insert into notes values ('first try')")
        return [r["body"] for r in await con.fetch("select body from notes")]
    finally:
        await con.close()


@pytest.mark.skipif(not AS_ROOT, reason="as root only: svc then runs the cluster as the postgres user, who must "
                                        "pass through the directories svc made under umask 077 (a plain user's "
                                        "case is the next test)")
async def test_as_root_svc_db_create_works_on_the_first_try_under_svc_serves_umask(tmp_path: Path) -> None:
    with passable_tmp() as top:
        # As on a fresh machine: /var/lib/svc does not exist yet (here, under a passable directory).
        cluster_dir = top / "var" / "lib" / "svc" / "projectdb-first"
        settings = {"SVC_PROJECT_DB_ENABLED": "true", "SVC_PROJECT_DB_DIR": str(cluster_dir)}
        async with svc_serve(tmp_path, **settings) as server, \
                httpx.AsyncClient(base_url=server.api, timeout=120) as http:
            token = (await http.post("/v1/auth/dev/login", json={"subject": "first"})).json()["token"]
            http.headers["authorization"] = f"Bearer {token}"
            assert (await http.post("/v1/orgs/first/projects", json={"name": "web"})).status_code == 201
            r = await http.post("/v1/orgs/first/projects/web/database")
            assert r.status_code == 200, r.text
            assert await _rows(r.json()) == ["first try"]
        # The directories made on the way are passable; the cluster's own is the postgres user's alone.
        for made in (top / "var", top / "var" / "lib", top / "var" / "lib" / "svc"):
            assert _mode(made) == 0o755, made
        assert _mode(cluster_dir) == 0o700
        assert cluster_dir.stat().st_uid == pwd.getpwnam("postgres").pw_uid
        assert _mode(cluster_dir / "admin.pw") == 0o600


@pytest.mark.skipif(not AS_ROOT, reason="as root only: /var/lib/svc (svc's own, above the clusters) is repaired "
                                        "for the postgres user")
async def test_as_root_svcs_own_parent_left_0700_by_an_earlier_start_is_made_passable() -> None:
    binary = find_postgres()
    assert binary is not None
    with passable_tmp() as top, umask(PRIVATE_UMASK):
        own = top / "svc"
        own.mkdir(mode=0o700)  # what an svc before this fix left on a fresh machine
        cluster = PrivateCluster(own / "projectdb-x", binary, user="postgres", own_parent=True)
        try:
            await cluster.start()
            assert cluster.supervisor is not None and cluster.supervisor.running
        finally:
            await cluster.stop()
        assert _mode(own) == 0o755


@pytest.mark.skipif(AS_ROOT, reason="as a plain user only: as root the cluster runs as the postgres user (the "
                                    "tests above)")
async def test_as_a_plain_user_the_first_database_works_under_umask_077(tmp_path: Path) -> None:
    config = configured(Settings(data_dir=tmp_path / "data"), project_db_enabled=True)
    with umask(PRIVATE_UMASK):
        running = await start_database(config)
        try:
            node = running.node
            assert isinstance(node, PrivateNode)
            password = "first-try-password"
            endpoint = await node.provision("prj_first", verifier(password), LIMITS)
            creds = {"host": endpoint.host, "port": endpoint.port, "database": endpoint.database,
                     "user": node.names("prj_first")[1], "password": password}
            assert await _rows(creds) == ["first try"]
        finally:
            await running.stop()
    assert _mode(tmp_path / "data" / "projectdb") == 0o700


def test_the_directories_made_above_a_cluster_are_passable_whatever_the_umask(tmp_path: Path) -> None:
    from svc.adapters.database.process import made_parents

    with umask(0o077):
        made_parents(tmp_path / "a" / "b" / "projectdb")
    assert _mode(tmp_path / "a") == _mode(tmp_path / "a" / "b") == 0o755
    assert not (tmp_path / "a" / "b" / "projectdb").exists()
