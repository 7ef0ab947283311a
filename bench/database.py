"""Project databases (issue 27, in progress): provisioning a project's database against a bare
CREATE ROLE + CREATE DATABASE on the same cluster, in the same run.

    .venv/bin/python bench/database.py [--projects 30]

A private cluster of svc's (adapters/database/process.py: initdb with scram-sha-256, run as the
postgres user when this runs as root) in a fresh directory. Alternately, one project at a time:

- svc: the database node's provision() (the role with its SCRAM verifier, its limits and
  statement timeout; the database owned by it; CONNECT revoked from PUBLIC, granted to the role),
  which POST .../database will call;
- bare: CREATE ROLE ... LOGIN PASSWORD '...' and CREATE DATABASE ... OWNER ..., on one
  administrator's connection kept open (the least a provisioning can do).

Goal (the issue's, for POST P once it exists): <= 1.5x of bare. The rest of the issue's bench
(generations, restores, the hourly checks at 200 projects, env.db's round trip) comes with those
parts."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
from harness import machine

from svc.adapters.database.postgres import PostgresNode
from svc.adapters.database.process import PrivateCluster, find_postgres
from svc.adapters.database.scram import verifier

GOAL = 1.5


async def run(projects: int) -> tuple[list[float], list[float]]:
    binary = find_postgres()
    if binary is None:
        sys.exit("PostgreSQL's server is not installed (make setup)")
    root = Path(tempfile.mkdtemp(prefix="svc-bench-db-"))
    os.chmod(root, 0o755)  # the postgres user passes through
    cluster = PrivateCluster(root / "projectdb", binary, user="postgres" if os.geteuid() == 0 else None)
    await cluster.start()
    node = PostgresNode(cluster.admin_url)
    admin = await asyncpg.connect(cluster.admin_url)
    ours: list[float] = []
    bare: list[float] = []
    try:
        for i in range(projects):
            t0 = time.perf_counter()
            await node.provision(f"prj_bench{i}", verifier(secrets.token_urlsafe(24)))
            ours.append(time.perf_counter() - t0)
            name = f"bare_{i}"
            t0 = time.perf_counter()
            await admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{secrets.token_urlsafe(24)}'")
            await admin.execute(f"CREATE DATABASE {name} OWNER {name}")
            bare.append(time.perf_counter() - t0)
    finally:
        await admin.close()
        await cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    return ours, bare


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--projects", type=int, default=30)
    args = ap.parse_args()
    print(f"project databases: provisioning, {args.projects} projects; {machine()}")
    ours, bare = asyncio.run(run(args.projects))
    ratio = statistics.median(ours) / statistics.median(bare)
    print(f"  provision (svc's node)  p50 {statistics.median(ours) * 1000:.1f} ms   bare CREATE ROLE + CREATE DATABASE "
          f"p50 {statistics.median(bare) * 1000:.1f} ms   ratio {ratio:.2f} (goal <= {GOAL}): "
          f"{'met' if ratio <= GOAL else 'MISSED'}")


if __name__ == "__main__":
    main()
