"""API benchmark: an authenticated GET /v1/orgs/{org}/members against a bare FastAPI endpoint.

    .venv/bin/python bench/api.py [--duration 10] [--rounds 3] [--warmup 3] [--connections 16]

One server process (uvicorn, the options of `svc serve`, SQLite store, dev login) serves both
targets: svc's members list (Bearer session token -> principal -> role check -> SQL -> JSON) and
`GET /bench/bare`, a FastAPI route added to the same app that returns a constant JSON body of
similar size. The server is pinned to core 0 and the load generator (wrk, or a small Python
generator when wrk is missing) to core 1. The targets alternate over a few rounds; prints each
round, then requests/s and p50/p99 latency of both in the median round and the ratio members/bare
(goal >= 0.5)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from harness import machine, wait_for_server

ROOT = Path(__file__).resolve().parents[1]
ORG = "bench"
MEMBERS = 4  # besides the owner


def bare_body() -> dict[str, Any]:
    """Shaped and sized like the members list the benchmark reads (five members)."""
    return {"members": [
        {"user": {"id": f"usr_0000000000{i:02d}aaaaaaaaaaaa", "provider": "dev", "subject": f"bench-member-{i}",
                  "email": None, "name": None},
         "role": "member", "joinedAt": "2025-01-01T00:00:00.000Z"} for i in range(MEMBERS + 1)]}


# --- the server process ---------------------------------------------------------------------------

def serve(data_dir: Path, port_file: Path) -> None:
    from svc.app import create_app, default_adapters
    from svc.operator.serve import serve_reporting_port, server_config
    from svc.settings import Settings

    settings = Settings(data_dir=data_dir, enable_dev_auth=True, database_url=None)
    app = create_app(settings, default_adapters(settings))
    body = bare_body()

    @app.get("/bench/bare", include_in_schema=False)  # type: ignore[untyped-decorator,unused-ignore]
    async def bare() -> dict[str, Any]:
        return body

    # Exactly the server `svc serve` runs (src/svc/operator/serve.py), on a free port.
    asyncio.run(serve_reporting_port(server_config(app, host="127.0.0.1", port=0, log_level="warning"), port_file))


# --- load generation ------------------------------------------------------------------------------

@dataclass
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    tool: str
    requests: int
    # The server's own CPU time per request (utime + stime over the run / requests): unlike
    # requests/s, barely moved by neighbours' load on a shared machine.
    cpu_ms: float | None = None


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not m:
        raise ValueError(f"unexpected wrk latency {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def run_wrk(url: str, headers: dict[str, str], seconds: float, connections: int, pin: list[str]) -> Result:
    cmd = [*pin, "wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency"]
    for name, value in headers.items():
        cmd += ["-H", f"{name}: {value}"]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True, timeout=seconds + 30).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors += sum(int(x) for x in m.groups()) if m else 0
    return Result(rps=rps, p50_ms=p50, p99_ms=p99, errors=errors, tool="wrk", requests=requests)


async def _python_load(url: str, headers: dict[str, str], seconds: float, connections: int) -> Result:
    """Fallback when wrk cannot be had: keep-alive HTTP/1.1 connections over asyncio streams."""
    u = httpx.URL(url)
    extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = f"GET {u.raw_path.decode()} HTTP/1.1\r\nHost: {u.host}:{u.port}\r\n{extra}\r\n".encode()
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def one_connection() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(u.host, u.port)
        try:
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - t0)
                if not head.startswith(b"HTTP/1.1 2"):
                    errors += 1
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(one_connection() for _ in range(connections)))
    elapsed = time.perf_counter() - start
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return Result(rps=len(latencies) / elapsed, p50_ms=pct(0.50), p99_ms=pct(0.99), errors=errors, tool="python",
                  requests=len(latencies))


def run_python(url: str, headers: dict[str, str], seconds: float, connections: int, pin: list[str]) -> Result:
    # Pinned like wrk would be: this process moves itself to the load generator's core.
    if pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(pin[-1])})
    return asyncio.run(_python_load(url, headers, seconds, connections))


def ensure_wrk() -> bool:
    if shutil.which("wrk"):
        return True
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("wrk is missing: apt-get install -y wrk", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False, capture_output=True)
    return shutil.which("wrk") is not None


def server_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (Linux), None where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(load: Any, server_pid: int, url: str, headers: dict[str, str], seconds: float, connections: int,
             pin: list[str]) -> Result:
    before = server_cpu_seconds(server_pid)
    result: Result = load(url, headers, seconds, connections, pin)
    after = server_cpu_seconds(server_pid)
    if before is not None and after is not None and result.requests:
        result.cpu_ms = 1000 * (after - before) / result.requests
    return result


# --- the run ---------------------------------------------------------------------------------------

def setup_org(base: str) -> tuple[str, int]:
    """Owner + MEMBERS members in org `bench`; returns the owner's session token and the list's size."""
    with httpx.Client(base_url=base, timeout=30) as c:
        def login(subject: str) -> dict[str, Any]:
            r = c.post("/v1/auth/dev/login", json={"subject": subject})
            r.raise_for_status()
            return dict(r.json())

        owner = login("bench-owner")
        auth = {"authorization": f"Bearer {owner['token']}"}
        c.post("/v1/orgs", json={"slug": ORG, "name": "Bench"}, headers=auth).raise_for_status()
        for i in range(MEMBERS):
            subject = f"bench-member-{i}"
            login(subject)
            c.post(f"/v1/orgs/{ORG}/members", json={"provider": "dev", "subject": subject, "role": "member"},
                   headers=auth).raise_for_status()
        r = c.get(f"/v1/orgs/{ORG}/members", headers=auth)
        r.raise_for_status()
        assert len(r.json()["members"]) == MEMBERS + 1
        return str(owner["token"]), len(r.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds measured per target and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (bare, members)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of warm-up per target")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--serve", nargs=2, metavar=("DATA_DIR", "PORT_FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), Path(args.serve[1]))
        return

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    pinned = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
    server_pin = ["taskset", "-c", "0"] if pinned else []
    load_pin = ["taskset", "-c", "1"] if pinned else []
    have_wrk = ensure_wrk()
    load = run_wrk if have_wrk else run_python

    with tempfile.TemporaryDirectory(prefix="svc-bench-") as tmp:
        port_file = Path(tmp) / "port"
        log = (Path(tmp) / "server.log").open("wb")
        server = subprocess.Popen([*server_pin, sys.executable, __file__, "--serve", str(Path(tmp) / "data"),
                                   str(port_file)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = wait_for_server(server, port_file)
            token, size = setup_org(base)
            bare_size = len(json.dumps(bare_body(), separators=(",", ":")))
            targets = {
                "bare": (f"{base}/bench/bare", None),
                "members": (f"{base}/v1/orgs/{ORG}/members", token),
            }
            for url, tok in targets.values():
                load(url, bearer(tok), args.warmup, args.connections, load_pin)
            # Alternate the targets over several rounds, so a neighbour's burst of load on a shared
            # machine hits both alike; the ratio is the median of the rounds' ratios.
            rounds: list[dict[str, Result]] = []
            for _ in range(args.rounds):
                rounds.append({name: measured(load, server.pid, url, bearer(tok), args.duration, args.connections,
                                              load_pin) for name, (url, tok) in targets.items()})
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()

    ratios = [r["members"].rps / r["bare"].rps for r in rounds]
    best = sorted(range(len(rounds)), key=lambda i: ratios[i])[len(rounds) // 2]
    bare, members = rounds[best]["bare"], rounds[best]["members"]
    tool = bare.tool
    print(f"machine: {machine()}; load average before the run {load_before}")
    print(f"pinning: server {'core 0' if pinned else 'unpinned'}, load generator "
          f"{'core 1' if pinned else 'unpinned'} ({tool}, {args.connections} connections, "
          f"{args.rounds} rounds of {args.duration:g} s per target after {args.warmup:g} s warm-up)")
    print(f"server: uvicorn, options of `svc serve`; SQLite store; bodies: members {size} B, bare {bare_size} B")
    def cpu(res: Result) -> str:
        return f" (server CPU {res.cpu_ms:.3f} ms/req)" if res.cpu_ms is not None else ""

    for i, r in enumerate(rounds):
        print(f"  round {i + 1}: bare {r['bare'].rps:7.0f} req/s{cpu(r['bare'])}, members {r['members'].rps:7.0f} "
              f"req/s{cpu(r['members'])}, ratio {ratios[i]:.2f}")
    print("median round:")
    for name, res in (("bare FastAPI endpoint", bare), ("GET /v1/orgs/{org}/members", members)):
        print(f"  {name:28s} {res.rps:9.0f} req/s   p50 {res.p50_ms:7.2f} ms   p99 {res.p99_ms:7.2f} ms"
              f"   errors {res.errors}")
    ratio = ratios[best]
    print(f"ratio members/bare: {ratio:.2f} (goal >= 0.5: {'met' if ratio >= 0.5 else 'NOT met'})")
    cpu_ratios = sorted(r["bare"].cpu_ms / r["members"].cpu_ms for r in rounds  # type: ignore[operator]
                        if r["bare"].cpu_ms and r["members"].cpu_ms)
    if cpu_ratios:
        print(f"server CPU per request, bare/members (median round): {cpu_ratios[len(cpu_ratios) // 2]:.2f} "
              "(what the ratio would be with the server's core to itself)")
    if any(r.errors for rr in rounds for r in rr.values()):
        sys.exit("some requests failed")


if __name__ == "__main__":
    main()
