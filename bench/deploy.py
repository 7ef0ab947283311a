"""How fast a change reaches the edge, at 10 and at 10,000 projects, against a peer checkout.

    .venv/bin/python bench/deploy.py [--peer ../other-checkout] [--projects 10000] [--deploys 40]
                                     [--clients 8] [--seconds 8]

A real `svc serve` (SQLite store, dev login, its edge: nginx) on a fresh data dir, measured in one
run, then the same for the peer (another checkout of svc, e.g. the code before the edge's host
links: `git worktree add ../before <commit>` and `make setup` there), each with its own venv:

1. deploy -> served: a tiny bundle POSTed to .../deployments until its 201 (which means live on
   this svc's edge), then a GET through the edge on a fresh connection that must answer the new
   version; p50 and p99 of both. At 10 projects, and again at N (default 10,000).
2. edge-changing operations per second with 8 concurrent clients, each creating a project and
   deploying to it in a loop (both count).
3. the edge's nginx: memory (PSS of master and workers, /proc/<pid>/smaps_rollup) and the time
   of a graceful reload (SIGHUP until only new workers remain), at 10 and at N projects.

The N projects are seeded straight into the stopped server's SQLite store, each a copy of one
project made through the API (its row, its default hostname, its live deployment: one shared
site), so the peer's schema needs no code of this checkout; then the server starts again (the time
until a seeded host is served is printed: the edge's start on N projects).

Goals (issue 25): deploy -> served p50 under 50 ms at 10 and at 10,000 projects alike; at least 50
operations/s with 8 clients."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import signal
import sqlite3
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from harness import ApiClient, Server, children, pct

ROOT = Path(__file__).resolve().parents[1]
GOAL_P50_MS = 50.0
GOAL_OPS = 50.0


def bundle(text: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in {"svc.json": b"{}", "assets/index.html": text.encode()}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


async def deploy_latency(client: ApiClient, name: str, host: str, count: int) -> tuple[list[float], list[float]]:
    """(POST -> 201 ms, POST -> served ms) of `count` deploys of new text to one project."""
    to_201, to_served = [], []
    for i in range(count):
        text = f"{name} {i} {time.time_ns()}"
        t0 = time.perf_counter()
        await client.deploy(name, bundle(text))
        t1 = time.perf_counter()
        served = await client.until(host, text, t0)
        to_201.append((t1 - t0) * 1000)
        to_served.append(served * 1000)
    return to_201, to_served


async def operations(server: Server, clients: int, seconds: float) -> float:
    """Edge-changing operations per second: each client creates a project, deploys to it, again."""
    users = [await ApiClient.login(server, f"ops{i}") for i in range(clients)]
    done = 0
    stop = time.perf_counter() + seconds

    async def loop(user: ApiClient, tag: int) -> None:
        nonlocal done
        n = 0
        while time.perf_counter() < stop:
            name = f"o{tag}-{n}-{time.time_ns() % 100000}"
            await user.create(name)
            done += 1
            await user.deploy(name, bundle(name))
            done += 1
            n += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(loop(u, i) for i, u in enumerate(users)))
    elapsed = time.perf_counter() - t0
    for u in users:
        await u.close()
    return done / elapsed


def nginx_memory_kb(server: Server) -> int:
    """PSS of the edge's nginx master and workers."""
    total = 0
    master = server.nginx()
    for pid in [master, *children(master)]:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return total


def worker_pids(master: int) -> set[int]:
    out = set()
    for pid in children(master):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if title.startswith("nginx: worker process") and "shutting down" not in title:
            out.add(pid)
    return out


def reload_ms(server: Server) -> float:
    """A graceful reload of the edge's nginx: SIGHUP until only new workers accept."""
    master = server.nginx()
    old = worker_pids(master)
    t0 = time.perf_counter()
    os.kill(master, signal.SIGHUP)
    while True:
        now = worker_pids(master)
        if now and not now & old:
            return (time.perf_counter() - t0) * 1000
        if time.perf_counter() - t0 > 120:
            sys.exit("nginx did not reload within 120 s")
        time.sleep(0.001)


def seed(data_dir: Path, template: str, count: int) -> None:
    """Copies of the project `template` (row, default hostname, live deployment) straight into the
    stopped server's SQLite store, column by column as that checkout's schema has them."""
    db = sqlite3.connect(data_dir / "svc.sqlite3")
    try:
        cols = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in ("projects", "hostnames",
                                                                                  "deployments")}
        project = dict(zip(cols["projects"], db.execute("SELECT * FROM projects WHERE name = ?",
                                                        (template,)).fetchone(), strict=True))
        host = dict(zip(cols["hostnames"], db.execute("SELECT * FROM hostnames WHERE project_id = ?",
                                                     (project["id"],)).fetchone(), strict=True))
        dep = dict(zip(cols["deployments"], db.execute("SELECT * FROM deployments WHERE id = ?",
                                                      (project["live_deployment_id"],)).fetchone(), strict=True))
        suffix = host["host"].split("-", 1)[1]  # {org}.{app domain}, after "{project}-"
        for i in range(count):
            pid, did, name = f"prj_seed{i:08d}", f"dep_seed{i:08d}", f"s{i}"
            db.execute(f"INSERT INTO projects ({', '.join(cols['projects'])}) VALUES "
                       f"({', '.join('?' * len(cols['projects']))})",
                       [{"id": pid, "name": name, "live_deployment_id": None}.get(c, project[c])
                        for c in cols["projects"]])
            db.execute(f"INSERT INTO deployments ({', '.join(cols['deployments'])}) VALUES "
                       f"({', '.join('?' * len(cols['deployments']))})",
                       [{"id": did, "project_id": pid, "version": 1}.get(c, dep[c]) for c in cols["deployments"]])
            db.execute("UPDATE projects SET live_deployment_id = ? WHERE id = ?", (did, pid))
            db.execute(f"INSERT INTO hostnames ({', '.join(cols['hostnames'])}) VALUES "
                       f"({', '.join('?' * len(cols['hostnames']))})",
                       [{"host": f"{name}-{suffix}", "project_id": pid}.get(c, host[c]) for c in cols["hostnames"]])
        db.execute("UPDATE edge_state SET generation = generation + 1")
        db.commit()
    finally:
        db.close()


async def measure(checkout: Path, tmp: Path, args: argparse.Namespace) -> dict[str, object]:
    server = Server(checkout, tmp / checkout.name / "data")
    server.data_dir.mkdir(parents=True)
    result: dict[str, object] = {}
    server.start()
    try:
        user = await ApiClient.login(server, "bench")
        hosts = {f"p{i}": await user.create(f"p{i}") for i in range(10)}
        for name in hosts:
            await user.deploy(name, bundle(f"{name} first"))
        a201, aserved = await deploy_latency(user, "p0", hosts["p0"], args.deploys)
        result["10"] = {"post_201_p50": pct(a201, 0.5), "post_201_p99": pct(a201, 0.99),
                        "served_p50": pct(aserved, 0.5), "served_p99": pct(aserved, 0.99),
                        "nginx_pss_kb": nginx_memory_kb(server),
                        "reload_ms": statistics.median(reload_ms(server) for _ in range(3))}
        result["ops_per_s"] = await operations(server, args.clients, args.seconds)
        await user.close()
        server.stop()

        seed(server.data_dir, "p1", args.projects)
        t0 = time.perf_counter()
        server.start()
        user = await ApiClient.login(server, "bench")
        last = f"s{args.projects - 1}-{hosts['p1'].split('-', 1)[1]}"
        while (await user.served(last)) != "p1 first":
            if time.perf_counter() - t0 > 600:
                sys.exit(f"{last} was not served within 600 s of the start")
        result["start_to_served_s"] = time.perf_counter() - t0
        b201, bserved = await deploy_latency(user, "p0", hosts["p0"], args.deploys)
        result[str(args.projects)] = {"post_201_p50": pct(b201, 0.5), "post_201_p99": pct(b201, 0.99),
                                      "served_p50": pct(bserved, 0.5), "served_p99": pct(bserved, 0.99),
                                      "nginx_pss_kb": nginx_memory_kb(server),
                                      "reload_ms": statistics.median(reload_ms(server) for _ in range(3))}
        await user.close()
    finally:
        server.stop()
    return result


def report(name: str, r: dict[str, object], n: int) -> None:
    small, big = r["10"], r[str(n)]
    assert isinstance(small, dict) and isinstance(big, dict)
    print(f"\n{name}")
    for label, key in (("deploy POST -> 201 p50", "post_201_p50"), ("deploy POST -> served p50", "served_p50"),
                       ("deploy POST -> served p99", "served_p99")):
        print(f"  {label:<28} {small[key]:8.1f} ms at 10 projects {big[key]:8.1f} ms at {n:,}")
    print(f"  {'nginx memory (PSS)':<28} {small['nginx_pss_kb'] / 1024:8.1f} MB at 10 projects "
          f"{big['nginx_pss_kb'] / 1024:8.1f} MB at {n:,} ({big['nginx_pss_kb'] / small['nginx_pss_kb']:.2f}x)")
    print(f"  {'nginx reload':<28} {small['reload_ms']:8.1f} ms at 10 projects {big['reload_ms']:8.1f} ms at "
          f"{n:,} ({big['reload_ms'] / small['reload_ms']:.2f}x)")
    print(f"  {'edge-changing ops/s':<28} {r['ops_per_s']:8.1f} with 8 clients (10+ projects)")
    print(f"  {'start to served':<28} {r['start_to_served_s']:8.1f} s at {n:,} projects")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", type=Path, help="another checkout of svc (with its .venv) measured the same way")
    ap.add_argument("--projects", type=int, default=10_000)
    ap.add_argument("--deploys", type=int, default=40)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-deploy-"))
    print(f"deploy -> served, operations/s, nginx at 10 and {args.projects:,} projects; "
          f"load average {os.getloadavg()[0]:.2f}")
    results = {"svc": asyncio.run(measure(ROOT, tmp, args))}
    if args.peer is not None:
        results["peer"] = asyncio.run(measure(args.peer.resolve(), tmp, args))
    for name, r in results.items():
        report(f"{name} ({ROOT if name == 'svc' else args.peer})", r, args.projects)
    ours = results["svc"]
    small, big = ours["10"], ours[str(args.projects)]
    assert isinstance(small, dict) and isinstance(big, dict)
    print("\nverdicts:")
    for label, value in (("at 10 projects", small["served_p50"]), (f"at {args.projects:,}", big["served_p50"])):
        print(f"  deploy -> served p50 {label}: {value:.1f} ms (goal < {GOAL_P50_MS:.0f} ms): "
              f"{'met' if value < GOAL_P50_MS else 'MISSED'}")
    ops = float(ours["ops_per_s"])  # type: ignore[arg-type]
    peer_ops = f", peer {results['peer']['ops_per_s']:.1f}/s" if "peer" in results else ""
    print(f"  edge-changing ops/s with {args.clients} clients: {ops:.1f} (goal >= {GOAL_OPS:.0f}){peer_ops}: "
          f"{'met' if ops >= GOAL_OPS else 'MISSED'}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
