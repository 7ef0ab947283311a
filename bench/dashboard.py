"""Dashboard benchmark: the project list page against the JSON list of the same projects, and the
weight of every page.

    .venv/bin/python bench/dashboard.py [--projects 100] [--duration 5] [--rounds 3] [--warmup 2]

One server process (uvicorn with the options of `svc serve`, SQLite store, dev login), an org with
100 projects (10 of them with a live deployment). Two targets, alternated over a few rounds:
`GET /orgs/bench/projects` (the page: session cookie -> principal -> role -> the projects with their
live deployment -> the memberships for the org switcher -> Jinja2 -> gzip) and
`GET /v1/orgs/bench/projects` (the JSON list: bearer token -> the same principal and role ->
projects -> JSON). Both send the same session token; the page's response is gzipped (as a browser
asks), the JSON not (as the CLI asks). Prints requests/s, p50/p99 and the server's CPU per request,
and the ratio page/JSON of the time per request (goal <= 1.5).

Then the weight of each page a signed-in person opens, as transferred (gzip, headers included) with
the static assets already cached (goal: the heaviest under 100 KB), and the assets' own weight on a
first visit."""

from __future__ import annotations

import argparse
import asyncio
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import httpx
from harness import machine, wait_for_server
from tests.support.config import configured

from api import Result, bearer, ensure_wrk, measured, run_python, run_wrk

ORG = "bench"


def serve(data_dir: Path, port_file: Path, projects: int) -> None:
    from svc.app import create_app, default_adapters
    from svc.operator.serve import serve_reporting_port, server_config
    from svc.settings import Settings

    settings = configured(Settings(data_dir=data_dir, enable_dev_auth=True, database_url=None), edge_enabled=False,
                          free_project_limit=projects)
    app = create_app(settings, default_adapters(settings))
    asyncio.run(serve_reporting_port(server_config(app, host="127.0.0.1", port=0, log_level="warning"), port_file))


def _bundle(n: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in {"svc.json": json.dumps({"name": "site"}).encode(),
                           "assets/index.html": f"<h1>site {n}</h1>".encode()}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)


def setup(base: str, projects: int) -> tuple[str, str]:
    """The org with its projects; returns the session token and one project's name."""
    with httpx.Client(base_url=base, timeout=60) as c:
        r = c.post("/v1/auth/dev/login", json={"subject": "bench-owner"})
        r.raise_for_status()
        token = r.json()["token"]
        auth = bearer(token)
        c.post("/v1/orgs", json={"slug": ORG, "name": "Bench"}, headers=auth).raise_for_status()
        for i in range(projects):
            name = f"project-{i:03d}"
            c.post(f"/v1/orgs/{ORG}/projects", json={"name": name}, headers=auth).raise_for_status()
            if i % 10 == 0:
                c.post(f"/v1/orgs/{ORG}/projects/{name}/deployments", content=_bundle(i),
                       headers={**auth, "content-type": "application/gzip"}).raise_for_status()
        c.put(f"/v1/orgs/{ORG}/projects/project-000/secrets/API_KEY", json={"value": "x"},
              headers=auth).raise_for_status()
        return str(token), "project-000"


def page_weights(base: str, token: str, project: str) -> tuple[list[tuple[str, int, int]], list[tuple[str, int]]]:
    """(path, bytes transferred, bytes unpacked) of each page; (asset, bytes transferred) of each asset."""
    cookies = {"svc_session": token}
    pages = [f"/orgs/{ORG}/projects", f"/orgs/{ORG}/projects/{project}",
             f"/orgs/{ORG}/projects/{project}/deployments", f"/orgs/{ORG}/projects/{project}/access",
             f"/orgs/{ORG}/projects/{project}/secrets", f"/orgs/{ORG}/projects/{project}/settings",
             f"/orgs/{ORG}/members", f"/orgs/{ORG}/invites", f"/orgs/{ORG}/notifications", f"/orgs/{ORG}/audit",
             f"/orgs/{ORG}/settings", "/orgs/new", "/account/tokens", "/account/ssh-keys"]
    weights = []
    assets: set[str] = set()
    with httpx.Client(base_url=base, cookies=cookies, timeout=30,
                      headers={"accept": "text/html", "accept-encoding": "gzip"}) as c:
        for path in pages:
            with c.stream("GET", path) as r:
                raw = b"".join(r.iter_raw())
                head = sum(len(k) + len(v) + 4 for k, v in r.headers.raw) + 17
                if r.status_code != 200:
                    sys.exit(f"{path}: {r.status_code}")
                text = gzip.decompress(raw) if r.headers.get("content-encoding") == "gzip" else raw
            weights.append((path, len(raw) + head, len(text)))
            assets.update(re.findall(r'(?:src|href)="(/static/[^"]+)"', text.decode()))
        asset_weights = []
        for url in sorted(assets):
            with c.stream("GET", url) as r:
                asset_weights.append((url.split("?")[0], len(b"".join(r.iter_raw()))))
    return weights, asset_weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per target and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--serve", nargs=3, metavar=("DATA_DIR", "PORT_FILE", "PROJECTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), Path(args.serve[1]), int(args.serve[2]))
        return

    pinned = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
    server_pin = ["taskset", "-c", "0"] if pinned else []
    load_pin = ["taskset", "-c", "1"] if pinned else []
    load = run_wrk if ensure_wrk() else run_python
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as tmp:
        port_file = Path(tmp) / "port"
        log = (Path(tmp) / "server.log").open("wb")
        server = subprocess.Popen([*server_pin, sys.executable, __file__, "--serve", str(Path(tmp) / "data"),
                                   str(port_file), str(args.projects)], stdout=log, stderr=subprocess.STDOUT)
        try:
            base = wait_for_server(server, port_file)
            token, project = setup(base, args.projects)
            targets = {
                "page": (f"{base}/orgs/{ORG}/projects",
                         {"Cookie": f"svc_session={token}", "Accept": "text/html", "Accept-Encoding": "gzip"}),
                "json": (f"{base}/v1/orgs/{ORG}/projects", bearer(token)),
            }
            for url, headers in targets.values():
                load(url, headers, args.warmup, args.connections, load_pin)
            rounds: list[dict[str, Result]] = []
            for _ in range(args.rounds):
                rounds.append({name: measured(load, server.pid, url, headers, args.duration, args.connections,
                                              load_pin) for name, (url, headers) in targets.items()})
            weights, asset_weights = page_weights(base, token, project)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()

    ratios = [r["json"].rps / r["page"].rps for r in rounds]
    best = sorted(range(len(rounds)), key=lambda i: ratios[i])[len(rounds) // 2]
    print(f"machine: {machine()}; load average before the run {load_before}")
    print(f"{args.projects} projects; {rounds[0]['page'].tool}, {args.connections} connections, {args.rounds} rounds "
          f"of {args.duration:g} s per target; server {'pinned to core 0' if pinned else 'unpinned'}")
    for i, r in enumerate(rounds):
        print(f"  round {i + 1}: page {r['page'].rps:6.0f} req/s ({r['page'].cpu_ms or 0:.2f} ms CPU/req), "
              f"json {r['json'].rps:6.0f} req/s ({r['json'].cpu_ms or 0:.2f} ms CPU/req), "
              f"page/json time {ratios[i]:.2f}")
    page, api = rounds[best]["page"], rounds[best]["json"]
    for name, res in (("GET /orgs/bench/projects (page)", page), ("GET /v1/orgs/bench/projects (JSON)", api)):
        print(f"  {name:36s} {res.rps:7.0f} req/s   p50 {res.p50_ms:6.2f} ms   p99 {res.p99_ms:6.2f} ms   "
              f"errors {res.errors}")
    ratio = ratios[best]
    verdict = "met" if ratio <= 1.5 else "NOT met"
    print(f"time per request, page/JSON (median round): {ratio:.2f} (goal <= 1.5: {verdict})")
    cpu = sorted(r["page"].cpu_ms / r["json"].cpu_ms for r in rounds  # type: ignore[operator]
                 if r["page"].cpu_ms and r["json"].cpu_ms)
    if cpu:
        print(f"server CPU per request, page/JSON (median round): {cpu[len(cpu) // 2]:.2f}")
    print("page weight, transferred with the assets cached (gzip, headers included):")
    for path, sent, unpacked in sorted(weights, key=lambda w: -w[1]):
        print(f"  {path:48s} {sent / 1024:6.1f} KB   ({unpacked / 1024:6.1f} KB of HTML)")
    heaviest = max(sent for _, sent, _ in weights)
    print(f"heaviest page: {heaviest / 1024:.1f} KB (goal < 100 KB: {'met' if heaviest < 100 * 1024 else 'NOT met'})")
    listed = ", ".join(f"{a} {w / 1024:.1f} KB" for a, w in asset_weights)
    print(f"assets on a first visit (gzip, then cached for a year): {sum(w for _, w in asset_weights) / 1024:.1f} KB: "
          f"{listed}")
    if any(r.errors for rr in rounds for r in rr.values()):
        sys.exit("some requests failed")


if __name__ == "__main__":
    main()
