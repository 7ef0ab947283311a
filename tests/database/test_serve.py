"""`svc serve` and the projects' databases: without SVC_PROJECT_DB_ADMIN_URL it initialises and
supervises a private PostgreSQL cluster under its data dir, says so in its banner, and stops it
with itself."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import asyncpg

from svc.adapters.database.process import ADMIN, PrivateCluster, find_postgres
from tests.support import components
from tests.support.serve import svc_serve

pytestmark = components.POSTGRES


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_svc_serve_runs_its_private_cluster_once_there_is_one_and_stops_it(tmp_path: Path) -> None:
    binary = find_postgres()
    assert binary is not None
    # (A directory the postgres user can reach, when svc runs as root: pytest's own is not.)
    data = Path(tempfile.mkdtemp(prefix="svc-test-serve-db-"))
    os.chmod(data, 0o755)
    root = data / "projectdb"
    settings = {"SVC_PROJECT_DB_DIR": str(root), "SVC_PROJECT_DB_ENABLED": "true"}
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    try:
        # No project has a database yet: no cluster is made, nothing runs.
        async with svc_serve(tmp_path / "first", **settings) as server:
            banner = server.log.read_text()
            assert (f"databases: a private PostgreSQL cluster ({binary}) in {root}, started with the first project "
                    "database") in banner
            assert not (root / "data").exists()
        # Once made (as the first database makes it), svc serve starts it, and stops it with itself.
        cluster = PrivateCluster(root, binary, user="postgres" if os.geteuid() == 0 else None)
        await cluster.start()
        await cluster.stop()
        async with svc_serve(tmp_path / "second", **settings):
            port = int((root / "port").read_text())
            password = (root / "admin.pw").read_text()
            assert (root / "admin.pw").stat().st_mode & 0o077 == 0
            con = await asyncpg.connect(host="127.0.0.1", port=port, user=ADMIN, password=password,
                                        database="postgres", timeout=10)
            assert await con.fetchval("show password_encryption") == "scram-sha-256"
            await con.close()
            pid = int((root / "postgres.pid").read_text())
            assert _alive(pid)
        for _ in range(200):  # svc stopped: so is its cluster
            if not _alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not _alive(pid)
    finally:
        shutil.rmtree(data, ignore_errors=True)
