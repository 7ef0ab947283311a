"""Project databases (issue 27, in progress), two measurements (--only one of them; both by default):

    .venv/bin/python bench/database.py [--only provision|envdb] [--projects 30] [--rounds 5] [--queries 200]

provision: a project's database provisioned through svc's node against a bare CREATE ROLE +
CREATE DATABASE on the same cluster, in the same run. A private cluster of svc's
(adapters/database/process.py: initdb with scram-sha-256, run as the postgres user when this runs
as root) in a fresh directory. Alternately, one project at a time:

- svc: the database node's provision() (the role with its SCRAM verifier, its limits and
  statement timeout; the database owned by it; CONNECT revoked from PUBLIC, granted to the role),
  which POST .../database calls;
- bare: CREATE ROLE ... LOGIN PASSWORD '...' and CREATE DATABASE ... OWNER ..., on one
  administrator's connection kept open (the least a provisioning can do).

Goal (the issue's, for POST P): <= 1.5x of bare.

envdb: env.db's round trip from a worker against a Python client to the same database as the
same role, in the same run. A real `svc serve` (SQLite store, dev login, its edge: nginx, its
worker runtime: workerd) whose database node is such a private cluster (SVC_PROJECT_DB_ADMIN_URL);
one project with a database (POST .../database: its credentials) and a worker served steadily.
Each of --rounds rounds, one after another, --queries times each:

- worker: `await env.db.query("select $1::int as n", [1])` timed in the worker itself, --queries
  in a row in one request (workerd's clock stands still while code runs and moves on across I/O,
  so it counts the round trips; it ticks in whole milliseconds, so each time is the mean of a
  batch of 10 queries, and the p50 is the median of those);
- peer: the same statement from Python on one connection of the project's role (psycopg 3 when it
  is installed, `select %s::int as n`; else asyncpg, `select $1::int as n`), timed per query;
- edge: a GET through the edge (Host: the project's, one keep-alive connection) to a worker path
  that runs the query and returns its rows, against one that returns the same rows without it;
- route: svc's route alone, POST /v1/runtime/projects/{id}/db as the runtime posts it (the
  runtime's token, read from the edge's nginx.conf), from Python on one keep-alive connection:
  what of the worker's round trip is svc's (the rest: workerd's RPC to svc's Database entrypoint
  and its fetch to svc).

Goal (the issue's): env.db's p50 overhead over the peer's p50 under 2 ms, told both ways: the
worker's p50 less the peer's, and what the query adds to a request's p50 at the edge (/query less
/const) less the peer's. psycopg is no dependency of svc's: without it the peer is asyncpg, whose
round trip is a little shorter than psycopg's (so the overhead a little larger).

backups: a generation and a restore of a 100 MB database through svc against plain pg_dump and
pg_restore of the same database in the same run (goal <= 1.2x each), and the hourly cycle's change
checks over 200 databases on one cluster (goal < 5 s)."""

from __future__ import annotations

import argparse
import asyncio
import http.client
import importlib
import importlib.util
import io
import json
import os
import re
import secrets
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import asyncpg
from harness import ApiClient, Server, machine, pct

from svc.adapters.blobs.files import FileBlobStore
from svc.adapters.database.backups import libpq_env, tool
from svc.adapters.database.port import ProjectLimits
from svc.adapters.database.postgres import PostgresNode
from svc.adapters.database.process import PrivateCluster, find_postgres
from svc.adapters.workers.workerd import find_workerd
from svc.domains.databases import generations
from svc.kit.scram import verifier
from svc.models import GenerationKind

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.5
GOAL_OVERHEAD_MS = 2.0
SQL = "select $1::int as n"
# The worker: /query runs the statement and returns its rows, /const returns the same rows without
# it, /loop?n=&batch= runs it n times in a row and returns the mean time of each batch of queries as
# the worker's clock saw it (the clock ticks in whole milliseconds: a batch of 10 reads to 0.1 ms).
BATCH = 10
WORKER = """
const SQL = __SQL__;
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/const") return Response.json({ rows: [{ n: 1 }] });
    if (url.pathname === "/query") {
      const { rows } = await env.db.query(SQL, [1]);
      return Response.json({ rows });
    }
    if (url.pathname === "/loop") {
      const n = Number(url.searchParams.get("n") || "200");
      const batch = Number(url.searchParams.get("batch") || "10");
      const times = [];
      const start = performance.now();
      for (let i = 0; i < n; i += batch) {
        const t0 = performance.now();
        for (let j = 0; j < batch; j++) {
          const { rows } = await env.db.query(SQL, [1]);
          if (rows[0].n !== 1) throw new Error("env.db answered " + JSON.stringify(rows));
        }
        times.push((performance.now() - t0) / batch);
      }
      return Response.json({ times, total: performance.now() - start });
    }
    return new Response("not found", { status: 404 });
  },
};
""".replace("__SQL__", json.dumps(SQL))

# A free plan's database (domains/orgs/plans.py).
LIMITS = ProjectLimits(connections=10, token_connections=1, statement_seconds=30, idle_transaction_seconds=60)


@asynccontextmanager
async def private_cluster() -> AsyncIterator[PrivateCluster]:
    """svc's private cluster in a fresh directory the postgres user can reach."""
    binary = find_postgres()
    if binary is None:
        sys.exit("PostgreSQL's server is not installed (make setup)")
    root = Path(tempfile.mkdtemp(prefix="svc-bench-db-"))
    os.chmod(root, 0o755)  # the postgres user passes through
    # Room for every project's ceiling the provisioning runs make (a free plan's 10 each).
    cluster = PrivateCluster(root / "projectdb", binary, user="postgres" if os.geteuid() == 0 else None,
                             max_connections=1000)
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


# --- provisioning ---

async def provisioning(projects: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    bare: list[float] = []
    async with private_cluster() as cluster:
        node = PostgresNode(cluster.admin_url)
        admin = await asyncpg.connect(cluster.admin_url)
        try:
            for i in range(projects):
                t0 = time.perf_counter()
                await node.provision(f"prj_bench{i}", verifier(secrets.token_urlsafe(24)), LIMITS)
                ours.append(time.perf_counter() - t0)
                name = f"bare_{i}"
                t0 = time.perf_counter()
                await admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{secrets.token_urlsafe(24)}'")
                await admin.execute(f"CREATE DATABASE {name} OWNER {name}")
                bare.append(time.perf_counter() - t0)
        finally:
            await admin.close()
    return ours, bare


def report_provisioning(projects: int) -> None:
    print(f"project databases: provisioning, {projects} projects; {machine()}")
    ours, bare = asyncio.run(provisioning(projects))
    ratio = statistics.median(ours) / statistics.median(bare)
    print(f"  provision (svc's node)  p50 {statistics.median(ours) * 1000:.1f} ms   bare CREATE ROLE + CREATE DATABASE "
          f"p50 {statistics.median(bare) * 1000:.1f} ms   ratio {ratio:.2f} (goal <= {GOAL}): "
          f"{'met' if ratio <= GOAL else 'MISSED'}")


# --- env.db's round trip ---

def worker_bundle() -> bytes:
    files = {"svc.json": b'{"compatibilityDate": "2025-06-01"}', "worker/index.js": WORKER.encode()}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Keepalive:
    """One HTTP/1.1 connection kept open (http.client: the least a client adds to a request)."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.con = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = headers

    def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        try:
            self.con.request(method, path, body=body, headers=self.headers)
            answer = self.con.getresponse()
        except (ConnectionError, http.client.RemoteDisconnected):
            # The server closed it while it was idle (uvicorn's keep-alive is 5 s): a new one.
            self.con.close()
            self.con.request(method, path, body=body, headers=self.headers)
            answer = self.con.getresponse()
        data = answer.read()
        if answer.status != 200:
            sys.exit(f"{method} {path} answered {answer.status}: {data[:500]!r}")
        return data

    def timed(self, count: int, method: str, path: str, body: bytes | None = None,
              check: Callable[[bytes], bool] | None = None) -> list[float]:
        spent = []
        for _ in range(count):
            t0 = time.perf_counter()
            data = self.request(method, path, body)
            spent.append(time.perf_counter() - t0)
            if check is not None and not check(data):
                sys.exit(f"{method} {path} answered {data[:500]!r}")
        return spent

    def close(self) -> None:
        self.con.close()


class Peer:
    """The project's role on one connection of its own, from Python: psycopg 3 when it is installed
    (it is no dependency of svc's), else asyncpg."""

    def __init__(self, creds: dict[str, Any]) -> None:
        self.creds = creds
        self.psycopg: Any = importlib.import_module("psycopg") if importlib.util.find_spec("psycopg") else None
        self.name = "psycopg" if self.psycopg is not None else "asyncpg"
        self.con: Any = None

    async def open(self) -> None:
        c = self.creds
        if self.psycopg is not None:
            self.con = self.psycopg.connect(host=c["host"], port=c["port"], dbname=c["database"], user=c["user"],
                                            password=c["password"], autocommit=True)
        else:
            self.con = await asyncpg.connect(host=c["host"], port=c["port"], database=c["database"],
                                             user=c["user"], password=c["password"])

    async def timed(self, count: int) -> list[float]:
        """Seconds of each of `count` queries in a row (psycopg prepares the statement from its
        fifth run on, asyncpg from its first: both send only Bind/Execute after that)."""
        spent = []
        if self.psycopg is not None:
            cur = self.con.cursor()
            for _ in range(count):
                t0 = time.perf_counter()
                cur.execute("select %s::int as n", (1,))
                rows = cur.fetchall()
                spent.append(time.perf_counter() - t0)
                assert rows == [(1,)], rows
        else:
            for _ in range(count):
                t0 = time.perf_counter()
                records = await self.con.fetch(SQL, 1)
                spent.append(time.perf_counter() - t0)
                assert records[0]["n"] == 1, records
        return spent

    async def close(self) -> None:
        if self.con is None:
            return
        if self.psycopg is not None:
            self.con.close()
        else:
            await self.con.close()


def runtime_token(server: Server) -> str:
    """The runtime's token (svc makes one per run and gives it to workerd and to the edge): from
    the edge's nginx.conf, the only place outside svc's memory that holds it past workerd's start."""
    conf = (server.data_dir / "edge" / "nginx.conf").read_text()
    m = re.search(r"\$svc_runtime_token \{\s*default (\S+);", conf)
    if m is None:
        sys.exit("the runtime's token is not in the edge's nginx.conf")
    return m.group(1).strip("\"'")


@dataclass
class EnvDbRun:
    """Seconds of each query or request (the worker's: per-query means of its batches, ms), by side."""

    peer_name: str
    worker_ms: list[float] = field(default_factory=list)
    worker_mean_ms: list[float] = field(default_factory=list)  # each round's n queries, all in one
    peer: list[float] = field(default_factory=list)
    edge_query: list[float] = field(default_factory=list)
    edge_const: list[float] = field(default_factory=list)
    route: list[float] = field(default_factory=list)
    overheads: list[tuple[float, float]] = field(default_factory=list)  # each round's (worker, edge), ms
    # A new connection as the project's role (TCP + SCRAM-SHA-256): what a driver inside the worker
    # would pay on every request (workerd ties a socket to the request that opened it).
    connect: list[float] = field(default_factory=list)


async def envdb(rounds: int, queries: int) -> EnvDbRun:
    from worker import until_steady  # bench/worker.py's: until the edge sends the host to its steady process

    if find_workerd() is None:
        sys.exit("workerd is not installed: run `make setup`")
    async with private_cluster() as cluster:
        tmp = Path(tempfile.mkdtemp(prefix="svc-bench-envdb-"))
        server = Server(ROOT, tmp / "data", settings={"SVC_DNS_ENABLED": "false", "SVC_PROJECT_DB_ENABLED": "true",
                                                       "SVC_PROJECT_DB_ADMIN_URL": cluster.admin_url})
        api: ApiClient | None = None
        peer: Peer | None = None
        edge = route = None
        try:
            server.start()
            api = await ApiClient.login(server, "bench", fresh=False)
            host = await api.create("db")
            r = await api.http.post(f"/v1/orgs/{api.org}/projects/db/database")
            assert r.status_code == 200, r.text
            creds = r.json()
            project_id = (await api.http.get(f"/v1/orgs/{api.org}/projects/db")).json()["id"]
            await api.deploy("db", worker_bundle())
            edge = Keepalive(server.edge_port, {"host": host})
            edge.request("GET", "/query")  # the isolate loaded, then served by its steady process
            await until_steady(server, host)
            route = Keepalive(server.api_port, {"content-type": "application/json",
                                                "x-svc-runtime-token": runtime_token(server)})
            body = json.dumps({"op": "query", "sql": SQL, "params": [1], "tx": None}).encode()
            route_path = f"/v1/runtime/projects/{project_id}/db"
            peer = Peer(creds)
            await peer.open()
            run = EnvDbRun(peer.name)
            rows = b'{"rows":[{"n":1}]}'
            # Every path warm first (svc's pool of the project's connections, the isolate, the statements).
            edge.timed(50, "GET", "/query")
            edge.timed(50, "GET", "/const")
            route.timed(50, "POST", route_path, body)
            edge.request("GET", f"/loop?n=50&batch={BATCH}")
            await peer.timed(50)
            for _ in range(30):
                t0 = time.perf_counter()
                con = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                            user=creds["user"], password=creds["password"])
                run.connect.append(time.perf_counter() - t0)
                await con.close()
            for n in range(1, rounds + 1):
                loop = json.loads(edge.request("GET", f"/loop?n={queries}&batch={BATCH}"))
                worker_ms = [float(t) for t in loop["times"]]
                peer_s = await peer.timed(queries)
                query_s = edge.timed(queries, "GET", "/query", check=lambda d: d == rows)
                const_s = edge.timed(queries, "GET", "/const", check=lambda d: d == rows)
                route_s = route.timed(queries, "POST", route_path, body, check=lambda d: b'"rows":[[1]]' in d)
                run.worker_ms += worker_ms
                run.worker_mean_ms.append(float(loop["total"]) / queries)
                run.peer += peer_s
                run.edge_query += query_s
                run.edge_const += const_s
                run.route += route_s
                p50 = {k: statistics.median(v) * 1000 for k, v in
                       {"peer": peer_s, "query": query_s, "const": const_s, "route": route_s}.items()}
                worker = statistics.median(worker_ms)
                run.overheads.append((worker - p50["peer"], p50["query"] - p50["const"] - p50["peer"]))
                print(f"round {n}: worker p50 {worker:.2f} ms (mean {loop['total'] / queries:.2f})   {peer.name} p50 "
                      f"{p50['peer']:.3f} ms   edge /query p50 {p50['query']:.2f} ms, /const {p50['const']:.2f} ms   "
                      f"svc's route alone p50 {p50['route']:.2f} ms   overhead: worker {run.overheads[-1][0]:.2f} ms, "
                      f"edge {run.overheads[-1][1]:.2f} ms")
        finally:
            for c in (edge, route):
                if c is not None:
                    c.close()
            if peer is not None:
                await peer.close()
            if api is not None:
                await api.close()
            server.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    return run


def report_envdb(rounds: int, queries: int) -> None:
    print(f"project databases: env.db's round trip, {rounds} rounds of {queries} queries; {machine()}; "
          f"load average {os.getloadavg()[0]:.2f}")
    r = asyncio.run(envdb(rounds, queries))
    ms = 1000.0
    worker = statistics.median(r.worker_ms)
    peer = statistics.median(r.peer) * ms
    edge_query = statistics.median(r.edge_query) * ms
    edge_const = statistics.median(r.edge_const) * ms
    route = statistics.median(r.route) * ms
    overhead = worker - peer
    edge_overhead = edge_query - edge_const - peer
    worker_rounds = [o[0] for o in r.overheads]
    edge_rounds = [o[1] for o in r.overheads]

    def verdict(value: float) -> str:
        return f"(goal < {GOAL_OVERHEAD_MS:.0f} ms): {'met' if value < GOAL_OVERHEAD_MS else 'MISSED'}"

    print(f"\n  env.db from the worker  p50 {worker:.2f} ms (its clock, per query over batches of {BATCH}; mean "
          f"{statistics.mean(r.worker_mean_ms):.2f} ms)   {r.peer_name} from Python p50 {peer:.3f} ms (p99 "
          f"{pct(r.peer, 0.99) * ms:.3f})   overhead {overhead:.2f} ms (rounds {min(worker_rounds):.2f}-"
          f"{max(worker_rounds):.2f}) {verdict(overhead)}")
    print(f"  through the edge        GET with the query p50 {edge_query:.2f} ms (p99 "
          f"{pct(r.edge_query, 0.99) * ms:.2f}), without {edge_const:.2f} ms: the query adds "
          f"{edge_query - edge_const:.2f} ms, overhead "
          f"{edge_overhead:.2f} ms (rounds {min(edge_rounds):.2f}-{max(edge_rounds):.2f}) {verdict(edge_overhead)}")
    print(f"  of which svc's route    POST /v1/runtime/projects/{{id}}/db from Python p50 {route:.2f} ms "
          f"({route - peer:.2f} ms over {r.peer_name}); the rest, workerd's side (the RPC to svc's Database "
          f"entrypoint, its fetch to svc, JSON): {edge_query - edge_const - route:.2f} ms")
    print(f"  a driver in the worker instead would open a connection per request: TCP + SCRAM-SHA-256 as the role "
          f"p50 {statistics.median(r.connect) * ms:.2f} ms (asyncpg), before its first query")
    print(f"  load average at the end {os.getloadavg()[0]:.2f} (a 2-vCPU box runs svc, workerd, nginx, PostgreSQL "
          f"and this client at once: each hop is a context switch)")


# --- generations and restores ---

GOAL_BACKUP = 1.2
CHECK_SECONDS = 5.0


async def _pg_tool(args: list[str], admin_url: str, database: str) -> None:
    process = await asyncio.create_subprocess_exec(*args, env=libpq_env(admin_url, database),
                                                   stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    _, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{args[0]}: {err.decode()[-500:]}")


async def backups(megabytes: int, rounds: int) -> dict[str, Any]:
    """A generation (svc: pg_dump in an exported snapshot with the rows counted, sha256, into the
    file blob store) against plain `pg_dump -Fc`; a restore (svc: the archive fetched and its sha256
    checked, the database made fresh, pg_restore in one transaction) against `CREATE DATABASE` +
    plain `pg_restore` of the same archive; alternating, on one database of `megabytes`."""
    times: dict[str, Any] = {k: [] for k in ("svc_dump", "pg_dump", "svc_restore", "pg_restore", "verify")}
    async with private_cluster() as cluster:
        node = PostgresNode(cluster.admin_url)
        project = "prj_backup_bench"
        await node.provision(project, verifier(secrets.token_urlsafe(24)), LIMITS)
        database, role = node.names(project)
        admin = await asyncpg.connect(cluster.admin_url, database=database)
        rows = megabytes * 1024 * 1024 // 250
        await admin.execute(f"set role {role}; create table big (id bigint primary key, body text); "
                            f"insert into big select g, md5(g::text) || repeat('x', 200) "
                            f"from generate_series(1, {rows}) g; reset role; analyze big")
        times["bytes"] = await admin.fetchval("select pg_database_size(current_database())")
        await admin.close()
        work = Path(tempfile.mkdtemp(prefix="svc-bench-backup-"))
        ctx: Any = SimpleNamespace(settings=SimpleNamespace(data_dir=work), blobs=FileBlobStore(work / "blobs"))
        plain = work / "plain.dump"
        try:
            for r in range(rounds):
                t0 = time.perf_counter()
                taken = await generations.take(ctx, node, project, 1)
                times["svc_dump"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await _pg_tool([tool("pg_dump"), "--format=custom", f"--file={plain}"], cluster.admin_url, database)
                times["pg_dump"].append(time.perf_counter() - t0)
                row = generations.row_of(taken, project, 1, r + 1, GenerationKind.scheduled)
                t0 = time.perf_counter()
                async with generations.fetched(ctx, row) as path:
                    await node.replace(project, path)
                await node.reopen(project)
                times["svc_restore"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                root = await asyncpg.connect(cluster.admin_url)
                await root.execute(f"CREATE DATABASE plain_{r} OWNER {role}")
                await root.close()
                await _pg_tool([tool("pg_restore"), f"--dbname=plain_{r}", str(plain)], cluster.admin_url, f"plain_{r}")
                times["pg_restore"].append(time.perf_counter() - t0)
                root = await asyncpg.connect(cluster.admin_url)
                await root.execute(f"DROP DATABASE plain_{r}")
                await root.close()
                verified = await generations.verify(ctx, node, row)
                assert verified.verified, verified.error
                times["verify"].append(verified.restore_seconds)
        finally:
            await node.close()
            shutil.rmtree(work, ignore_errors=True)
    return times


async def change_checks(projects: int, rounds: int) -> tuple[list[float], int]:
    """The hourly cycle's change checks over `projects` databases on one cluster: one query for
    all (node.change_markers), each round after a write to a tenth of them."""
    seconds: list[float] = []
    changed = 0
    async with private_cluster() as cluster:
        node = PostgresNode(cluster.admin_url)
        ids = [f"prj_check{i}" for i in range(projects)]
        for project in ids:
            await node.provision(project, verifier(secrets.token_urlsafe(24)), LIMITS)
        before = await node.change_markers(ids)
        for r in range(rounds):
            for project in ids[r::10]:
                con = await asyncpg.connect(cluster.admin_url, database=node.names(project)[0])
                await con.execute("create table if not exists t (x int); insert into t values (1)")
                await con.close()
            t0 = time.perf_counter()
            markers = await node.change_markers(ids)
            seconds.append(time.perf_counter() - t0)
            changed = sum(markers.get(p) != before.get(p) for p in ids)
            before = markers
        await node.close()
    return seconds, changed


def report_backups(megabytes: int, rounds: int, projects: int) -> None:
    print(f"project databases: generations and restores of a {megabytes} MB table, {rounds} rounds; {machine()}")
    t = asyncio.run(backups(megabytes, rounds))
    print(f"  database size {t['bytes'] / 2**20:.0f} MiB")
    for ours, peer, what in (("svc_dump", "pg_dump", "generation"), ("svc_restore", "pg_restore", "restore")):
        ratio = statistics.median(t[ours]) / statistics.median(t[peer])
        print(f"  {what:<10} svc p50 {statistics.median(t[ours]):.2f} s   plain {peer} p50 "
              f"{statistics.median(t[peer]):.2f} s   ratio {ratio:.2f} (goal <= {GOAL_BACKUP}): "
              f"{'met' if ratio <= GOAL_BACKUP else 'MISSED'}")
    print(f"  verification's scratch restore p50 {statistics.median(t['verify']):.2f} s (done after each generation, "
          "off the request path)")
    seconds, changed = asyncio.run(change_checks(projects, 3))
    print(f"  change checks of {projects} databases: p50 {statistics.median(seconds) * 1000:.1f} ms, max "
          f"{max(seconds) * 1000:.1f} ms ({changed} seen changed in the last round) (goal < {CHECK_SECONDS:g} s): "
          f"{'met' if max(seconds) < CHECK_SECONDS else 'MISSED'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("provision", "envdb", "backups"), help="one measurement (default: all)")
    ap.add_argument("--megabytes", type=int, default=100, help="backups: the database's size")
    ap.add_argument("--checked", type=int, default=200, help="backups: databases whose changes are checked")
    ap.add_argument("--projects", type=int, default=30, help="provision: projects provisioned by each side")
    ap.add_argument("--rounds", type=int, default=5, help="envdb: alternating rounds")
    ap.add_argument("--queries", type=int, default=200, help="envdb: queries (or requests) per side per round")
    args = ap.parse_args()
    if args.only in (None, "provision"):
        report_provisioning(args.projects)
    if args.only in (None, "envdb"):
        if args.only is None:
            print()
        report_envdb(args.rounds, args.queries)
    if args.only in (None, "backups"):
        if args.only is None:
            print()
        report_backups(args.megabytes, 3, args.checked)


if __name__ == "__main__":
    main()
