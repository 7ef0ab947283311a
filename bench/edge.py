"""Edge benchmark: a 10 KB file through svc's edge against a bare nginx serving the same files.

    .venv/bin/python bench/edge.py [--duration 5] [--rounds 3] [--connections 32]

A real `svc serve` (SQLite store, dev login) runs with its edge; through its API the benchmark
creates two projects, deploys the same bundle to both (POST .../deployments) and makes one of them
password-protected (PUT .../access), then signs in through the edge's password page
(POST /__svc/password, the real check endpoint of the access area) to get a valid `svc_access`
cookie. The bare nginx is the minimal static config (one worker, sendfile, no access log) with
its root on the very directory the edge serves for the public project.

Each nginx (master and worker; svc too) is pinned to core 0 and wrk to core 1. The targets
alternate over a few rounds; prints each round, then requests/s and p99 of each in the median
round and the ratios. A second reference, "tuned", is the bare config plus the static-file
settings the edge also has (open_file_cache, keepalive_requests), so the edge's own cost (host
map, error chain, and for the protected project the auth_request subrequest answered from the
check cache) shows separately. Goals: public >= 0.8x bare, protected >= 0.8x tuned.

Each round also measures the server side's CPU time per request (utime + stime from /proc of the
target's whole process tree: the bare nginx, or svc with its nginx, so the check API's answers
when the check cache expires count too). On a shared machine, load from other processes on core 0
lowers requests/s a lot and CPU per request little: compare the CPU ratios when rounds swing."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from harness import children, free_port

ROOT = Path(__file__).resolve().parents[1]
SVC = Path(sys.executable).parent / "svc"
FILE = "/10k.txt"
PASSWORD = "bench-password-1"
# target: (reference, goal for the ratio of requests/s)
GOALS = {"public": ("bare", 0.8), "protected": ("tuned", 0.8)}


def payload() -> bytes:
    line = b"The quick brown fox jumps over the lazy dog 0123456789.\n"
    return (line * (10240 // len(line) + 1))[:10240]


def bundle() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in {"svc.json": b"{}", "assets" + FILE: payload(),
                           "assets/index.html": b"<h1>bench</h1>"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{proc.args!r} exited:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            httpx.get(url, headers=headers, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    sys.exit(f"{url} did not answer:\n{log.read_text(errors='replace')[-3000:]}")


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children(p)
    return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid`'s process tree (exited children's reaped time included)."""
    total = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def pin(pid: int, core: int) -> None:
    for p in [pid, *children(pid)]:
        subprocess.run(["taskset", "-a", "-p", "-c", str(core), str(p)], check=True, stdout=subprocess.DEVNULL)


@dataclass
class Setup:
    edge_port: int
    public_host: str
    protected_host: str
    cookie: str
    web_root: Path


def prepare(api: str, edge_port: int, data_dir: Path) -> Setup:
    token = httpx.post(f"{api}/v1/auth/dev/login", json={"subject": "bench"}).json()["token"]
    c = httpx.Client(base_url=api, headers={"authorization": f"Bearer {token}"}, timeout=30)
    org = next(o["slug"] for o in c.get("/v1/me").json()["orgs"] if o["personal"])
    hosts = {}
    digest = ""
    for name in ("pub", "priv"):
        r = c.post(f"/v1/orgs/{org}/projects", json={"name": name})
        assert r.status_code == 201, r.text
        hosts[name] = r.json()["hostname"]
        r = c.post(f"/v1/orgs/{org}/projects/{name}/deployments", content=bundle(),
                   headers={"content-type": "application/gzip"})
        assert r.status_code == 201, r.text
        digest = r.json()["digest"]
    r = c.put(f"/v1/orgs/{org}/projects/priv/access", json={"mode": "password", "password": PASSWORD})
    assert r.status_code == 200, r.text
    edge = httpx.Client(base_url=f"http://127.0.0.1:{edge_port}", timeout=30)
    r = edge.get(FILE, headers={"host": hosts["priv"]})
    assert r.status_code == 302, (r.status_code, r.text)
    r = edge.post("/__svc/password", headers={"host": hosts["priv"]}, data={"password": PASSWORD, "next": FILE})
    assert r.status_code == 303, (r.status_code, r.text)
    cookie = r.headers["set-cookie"].split(";", 1)[0]
    for host, headers in ((hosts["pub"], {}), (hosts["priv"], {"cookie": cookie})):
        r = edge.get(FILE, headers={"host": host, **headers})
        assert r.status_code == 200 and r.content == payload(), (host, r.status_code)
    root = data_dir / "sites" / digest.split(":", 1)[1] / "assets"
    assert (root / FILE.lstrip("/")).read_bytes() == payload()
    return Setup(edge_port=edge_port, public_host=hosts["pub"], protected_host=hosts["priv"], cookie=cookie,
                 web_root=root)


def bare_config(tmp: Path, root: Path, port: int, name: str, tuned: bool,
                tls: tuple[Path, Path] | None = None) -> Path:
    """The minimal static config; `tuned` adds what the edge's config has for static files
    (open_file_cache, long keep-alive), as a second reference; `tls` (chain, key): over TLS with the
    edge's TLS settings (bench/edge_tls.py)."""
    conf = tmp / f"{name}.conf"
    (tmp / "bare-tmp").mkdir(exist_ok=True)
    extra = ("open_file_cache max=10000 inactive=30s; open_file_cache_valid 30s; keepalive_requests 10000; "
             "tcp_nopush on;") if tuned else ""
    if tls is not None:
        extra += (" ssl_protocols TLSv1.2 TLSv1.3; ssl_prefer_server_ciphers off; "
                  f"ssl_session_cache shared:{name}:10m; ssl_session_timeout 1d;")
    listen = f"127.0.0.1:{port} ssl;\n        ssl_certificate {tls[0]};\n        ssl_certificate_key {tls[1]}" \
        if tls is not None else f"127.0.0.1:{port}"
    conf.write_text(f"""worker_processes 1;
pid {tmp}/{name}.pid;
error_log {tmp}/{name}-error.log warn;
{"user root root;" if os.geteuid() == 0 else ""}
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log off;
    sendfile on;
    {extra}
    client_body_temp_path {tmp}/bare-tmp;
    proxy_temp_path {tmp}/bare-tmp;
    fastcgi_temp_path {tmp}/bare-tmp;
    uwsgi_temp_path {tmp}/bare-tmp;
    scgi_temp_path {tmp}/bare-tmp;
    server {{
        listen {listen};
        root {root};
    }}
}}
""")
    return conf


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def wrk(port: int, host: str, headers: dict[str, str], duration: int, connections: int, *,
        url: str | None = None, wrap: tuple[str, ...] = ()) -> tuple[float, float, int]:
    """(requests/s, p99 ms, requests) of wrk on core 1 against http://127.0.0.1:port with `host` as
    Host, or `url` (https by its name: bench/edge_tls.py, run under `wrap`)."""
    args = [*wrap, "taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency",
            "-H", f"Host: {host}"]
    for k, v in headers.items():
        args += ["-H", f"{k}: {v}"]
    out = subprocess.run([*args, url or f"http://127.0.0.1:{port}{FILE}"], capture_output=True, text=True,
                         check=True).stdout
    if "Non-2xx" in out:
        sys.exit(f"non-2xx answers during the run:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    assert p99, out
    return rps, float(p99.group(1)) * _UNITS[p99.group(2)], requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--no-traffic-log", action="store_true",
                    help="the edge without its log of every request (SVC_EDGE_TRAFFIC_LOG=false): no traffic counts")
    args = ap.parse_args()
    for tool in ("wrk", "taskset", "nginx"):
        if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin"):
            sys.exit(f"bench/edge.py needs {tool} (apt-get install wrk util-linux nginx-light)")
    if (os.cpu_count() or 1) < 2:
        sys.exit("bench/edge.py needs two cores (server on core 0, wrk on core 1)")

    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-edge-"))
    data_dir = tmp / "data"
    api_port, edge_port, bare_port, tuned_port = free_port(), free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env |= {"SVC_DATA_DIR": str(data_dir), "SVC_ENABLE_DEV_AUTH": "true",
            "SVC_PUBLIC_URL": f"http://127.0.0.1:{api_port}",
            "SVC_EDGE_TRAFFIC_LOG": "false" if args.no_traffic_log else "true"}
    log = tmp / "svc.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with log.open("wb") as out:
            svc = subprocess.Popen(["taskset", "-c", "0", str(SVC), "serve", "--port", str(api_port),
                                    "--edge-port", str(edge_port), "--log-level", "warning"],
                                   env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        procs.append(svc)
        wait_http(f"http://127.0.0.1:{api_port}/v1/openapi.json", svc, log)
        setup = prepare(f"http://127.0.0.1:{api_port}", edge_port, data_dir)
        pin(int((data_dir / "edge" / "nginx.pid").read_text()), 0)

        for name, port, tuned in (("bare", bare_port, False), ("tuned", tuned_port, True)):
            bare_log = tmp / f"{name}.log"
            with bare_log.open("wb") as out:
                bare = subprocess.Popen(["taskset", "-c", "0", "nginx", "-p", str(tmp), "-c",
                                         str(bare_config(tmp, setup.web_root, port, name, tuned)),
                                         "-g", "daemon off;"], stdout=out, stderr=subprocess.STDOUT)
            procs.append(bare)
            wait_http(f"http://127.0.0.1:{port}{FILE}", bare, bare_log)

        # target: (port, Host, headers, the process tree whose CPU time serves it)
        targets = {
            "bare": (bare_port, "localhost", {}, procs[1].pid),
            "tuned": (tuned_port, "localhost", {}, procs[2].pid),
            "public": (edge_port, setup.public_host, {}, svc.pid),
            "protected": (edge_port, setup.protected_host, {"Cookie": setup.cookie}, svc.pid),
        }
        print(f"10 KB file, wrk -t1 -c{args.connections} -d{args.duration}s on core 1; servers on core 0; "
              f"the edge's traffic log {'off' if args.no_traffic_log else 'on'}; "
              f"load average {os.getloadavg()[0]:.2f}")
        # name: [(req/s, p99 ms, CPU microseconds per request)]
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in targets}
        for port, host, headers, _ in targets.values():  # warm-up
            wrk(port, host, headers, 1, args.connections)
        for rnd in range(1, args.rounds + 1):
            for name, (port, host, headers, pid) in targets.items():
                before = cpu_seconds(pid)
                rps, p99, requests = wrk(port, host, headers, args.duration, args.connections)
                cpu_us = (cpu_seconds(pid) - before) / max(1, requests) * 1e6
                results[name].append((rps, p99, cpu_us))
                print(f"round {rnd} {name:<10} {rps:>10.0f} req/s  p99 {p99:7.2f} ms  cpu {cpu_us:6.2f} us/req")
        median = {name: sorted(runs)[len(runs) // 2] for name, runs in results.items()}
        cpu = {name: statistics.median(c for _, _, c in runs) for name, runs in results.items()}
        print()
        print(f"{'target':<10} {'req/s':>10} {'p99 ms':>8} {'/bare':>6} {'/tuned':>7} {'cpu us':>7} "
              f"{'cpu /tuned':>10}  goal (req/s ratio)")
        summary = {}
        for name, (rps, p99, _) in median.items():
            ratios = {ref: rps / median[ref][0] for ref in ("bare", "tuned")}
            cpu_ratio = cpu["tuned"] / cpu[name]  # > 1: less CPU per request than tuned
            goal = GOALS.get(name)
            verdict = "" if goal is None else (
                f">= {goal[1]}x {goal[0]}  " + ("met" if ratios[goal[0]] >= goal[1] else "MISSED"))
            print(f"{name:<10} {rps:>10.0f} {p99:>8.2f} {ratios['bare']:>6.2f} {ratios['tuned']:>7.2f} "
                  f"{cpu[name]:>7.2f} {cpu_ratio:>10.2f}  {verdict}")
            summary[name] = {"rps": round(rps), "p99_ms": p99, "ratio": round(ratios["bare"], 3),
                             "ratio_tuned": round(ratios["tuned"], 3), "cpu_us": round(cpu[name], 2),
                             "cpu_ratio_tuned": round(cpu_ratio, 3)}
        bare_rps = median["bare"][0]
        print(json.dumps({"median": summary, "rounds": args.rounds, "duration": args.duration,
                          "connections": args.connections, "loadavg": os.getloadavg()[0],
                          "spread": {n: round(statistics.pstdev([r for r, _, _ in runs]) / max(1, bare_rps), 3)
                                     for n, runs in results.items()}}))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM if p is procs[0] else signal.SIGQUIT)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
