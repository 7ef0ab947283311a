"""A private PostgreSQL cluster for the projects' databases (svc's own PrivateCluster: initdb with
scram-sha-256, run by the supervisor), one per test process, in a directory the postgres user can
reach when the tests run as root (pytest's tmp dirs are their owner's only)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg

from svc.adapters.database.process import PrivateCluster, find_postgres


@asynccontextmanager
async def running_cluster(max_connections: int = 1000) -> AsyncIterator[PrivateCluster]:
    """By default with room for the ceilings (a free plan's 10 connections each) of every database a
    test process makes; a test of the ceilings asks for a small cluster of its own."""
    binary = find_postgres()
    assert binary is not None
    root = Path(tempfile.mkdtemp(prefix="svc-test-projectdb-"))
    os.chmod(root, 0o755)
    cluster = PrivateCluster(root / "projectdb", binary, user="postgres" if os.geteuid() == 0 else None,
                             max_connections=max_connections)
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


async def as_project(creds: dict[str, Any], *statements: str) -> list[Any]:
    """Run statements as a project's role with the credentials svc gave it; the last one's rows (as
    tuples). The connection is closed after, which also flushes its statistics (what the change
    check reads)."""
    con = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                user=creds["user"], password=creds["password"])
    try:
        rows: list[Any] = []
        for statement in statements:
            rows = await con.fetch(statement)
        return [tuple(r) for r in rows]
    finally:
        await con.close()
