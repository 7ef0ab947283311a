"""Billing webhooks: verified-and-deduplicated deliveries per second through svc's HTTP server,
against a bare Standard Webhooks verification endpoint in the same server process, same run.

    .venv/bin/python bench/webhooks.py [--seconds 5] [--rounds 3] [--concurrency 16] [--stores sqlite,postgres]

The server is svc's app (SVC_BILLING=fake, a fixed webhook secret) run exactly as `svc serve` runs
it (`svc.operator.serve.server_config`), on SQLite and on PostgreSQL (a fresh database on the machine's
server, SVC_BENCH_PG, default postgresql://postgres@127.0.0.1:5432), with one route added to the
same app: `POST /bench/verify`, which verifies the delivery with `standardwebhooks` and answers
`{"applied": false}` (no store). That is the peer: the same HTTP server, request, body and
signature check, without the inbox and the plan.

Each delivery to svc is a signed `subscription.updated` for one of `--orgs` orgs in turn, with a
new webhook-id and a later modified time. So each is verified, kept in the inbox once and applied (the org's
subscription row updated, one write transaction). The deliveries are signed before the clock
starts, and the load generator (httpx, `--concurrency` requests in flight) runs in this process.
The two targets alternate over the rounds; the median round counts. The bare verification loop
alone (no HTTP) is printed beside, for scale. Goal: svc >= 0.3x the peer."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from fastapi import Request
from harness import wait_for_server
from standardwebhooks import Webhook
from tests.support.config import configured

ROOT = Path(__file__).resolve().parents[1]
SECRET = "whsec_bench-secret"
PG_BASE = os.environ.get("SVC_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
GOAL = 0.3


def deliveries(orgs: list[str], count: int) -> list[tuple[str, dict[str, str]]]:
    """`count` signed deliveries (body, headers), each a newer state of one of the orgs' subscriptions
    (the orgs in turn: deliveries to one org wait for each other, as at a real provider's orgs)."""
    hook = Webhook(base64.b64encode(SECRET.encode()).decode())
    start = datetime.now(UTC)
    made = []
    for i in range(count):
        org = orgs[i % len(orgs)]
        modified = (start + timedelta(microseconds=i)).isoformat().replace("+00:00", "Z")
        body = json.dumps({"type": "subscription.updated", "timestamp": modified, "api_version": "2026-10",
                           "data": {"id": f"sub_{org}", "status": "active", "customer_id": f"cus_{org}",
                                    "metadata": {"orgSlug": org}, "customer": {"id": "cus_bench", "external_id": org},
                                    "current_period_end": "2099-01-01T00:00:00Z", "cancel_at_period_end": False,
                                    "modified_at": modified, "created_at": modified}})
        webhook_id = f"msg_{uuid.uuid4().hex}"
        now = datetime.now(UTC)
        made.append((body, {"webhook-id": webhook_id, "webhook-timestamp": str(int(now.timestamp())),
                            "webhook-signature": hook.sign(webhook_id, now, body),
                            "content-type": "application/json"}))
    return made


def bare_rate(made: list[tuple[str, dict[str, str]]], seconds: float) -> float:
    """Verifications a second of the same deliveries, in a loop (the peer)."""
    hook = Webhook(base64.b64encode(SECRET.encode()).decode())
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        body, headers = made[done % len(made)]
        hook.verify(body, headers)
        done += 1
    return done / (time.perf_counter() - t0)


async def svc_rate(api: str, made: list[tuple[str, dict[str, str]]], seconds: float, concurrency: int,
                   path: str = "/v1/hooks/polar") -> float:
    """Deliveries a second to `path` (each answered 200), until `seconds` or the deliveries run out.
    The requests are built beforehand and sent on `concurrency` keep-alive connections with asyncio
    streams: an HTTP client library would be the bottleneck here (httpx: ~500 requests/s)."""
    host, port = api.removeprefix("http://").split(":")
    sent = 0
    stop = time.perf_counter() + seconds
    queue = iter(made)

    def request(body: str, headers: dict[str, str]) -> bytes:
        data = body.encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\n{head}content-length: {len(data)}\r\n\r\n").encode() + data

    async def connection() -> None:
        nonlocal sent
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for body, headers in queue:
                if time.perf_counter() > stop:
                    return
                writer.write(request(body, headers))
                status = await reader.readline()
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                answer = await reader.readexactly(length)
                if not status.startswith(b"HTTP/1.1 200"):
                    sys.exit(f"delivery refused: {status!r} {answer[:200]!r}")
                sent += 1
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return sent / (time.perf_counter() - t0)


def serve(data_dir: Path, port_file: Path, database_url: str) -> None:
    """The server process: svc's app as `svc serve` runs it, plus the peer's route."""
    from svc.app import create_app, default_adapters
    from svc.operator.serve import serve_reporting_port, server_config
    from svc.settings import Settings

    settings = configured(Settings(data_dir=data_dir, enable_dev_auth=True, database_url=database_url or None),
                          billing="fake", billing_webhook_secret=SECRET)
    app = create_app(settings, default_adapters(settings))
    hook = Webhook(base64.b64encode(SECRET.encode()).decode())

    @app.post("/bench/verify", include_in_schema=False)  # type: ignore[untyped-decorator,unused-ignore]
    async def verify(request: Request) -> dict[str, bool]:
        hook.verify(await request.body(), dict(request.headers))
        return {"applied": False}

    asyncio.run(serve_reporting_port(server_config(app, host="127.0.0.1", port=0, log_level="warning"), port_file))


def fresh_pg_database() -> str:
    name = f"svc_bench_hooks_{uuid.uuid4().hex[:8]}"
    subprocess.run(["psql", "-X", "-q", f"{PG_BASE}/postgres", "-c", f"CREATE DATABASE {name}"], check=True)
    return f"{PG_BASE}/{name}"


def drop_pg_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    subprocess.run(["psql", "-X", "-q", f"{PG_BASE}/postgres", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                   check=False)


def run_store(store: str, args: argparse.Namespace) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-hooks-"))
    pg = fresh_pg_database() if store == "postgres" else ""
    port_file = tmp / "port"
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(tmp / "data"), str(port_file), pg], cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        api = wait_for_server(proc, port_file)
        orgs = []
        for i in range(args.orgs):
            token = httpx.post(f"{api}/v1/auth/dev/login", json={"subject": f"bench{i}"}).json()["token"]
            me = httpx.get(f"{api}/v1/me", headers={"authorization": f"Bearer {token}"}).json()
            orgs.append(next(o["slug"] for o in me["orgs"] if o["personal"]))
        made = deliveries(orgs, int(args.seconds * 6000 * (args.rounds + 1)) + 1000)
        asyncio.run(svc_rate(api, made[:200], 1.0, args.concurrency))  # warm-up, both routes
        asyncio.run(svc_rate(api, made[:200], 1.0, args.concurrency, "/bench/verify"))
        fresh = iter(range(200, len(made), int(args.seconds * 6000)))
        rounds = []
        for _ in range(args.rounds):
            start = next(fresh)
            peer = asyncio.run(svc_rate(api, made, args.seconds, args.concurrency, "/bench/verify"))
            svc = asyncio.run(svc_rate(api, made[start:], args.seconds, args.concurrency))
            rounds.append((svc / peer, svc, peer))
            print(f"  {store:<9} round: svc {svc:>7.0f}/s   verify-only {peer:>7.0f}/s   {svc / peer:.3f}x")
        ratio, svc, peer = sorted(rounds)[len(rounds) // 2]
        bare = bare_rate(made, min(args.seconds, 2.0))
        print(f"{store:<9} svc {svc:>7.0f} deliveries/s against verify-only {peer:>7.0f}/s through the same server: "
              f"{ratio:.3f}x (goal >= {GOAL}x: {'met' if ratio >= GOAL else 'MISSED'}); "
              f"verify alone, no HTTP: {bare:,.0f}/s")
        return {"svc_per_s": round(svc), "verify_only_per_s": round(peer), "ratio": round(ratio, 3),
                "bare_loop_per_s": round(bare)}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        if pg:
            drop_pg_database(pg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--orgs", type=int, default=64, help="the orgs the deliveries are for, in turn")
    ap.add_argument("--serve", nargs=3, metavar=("DATA_DIR", "PORT_FILE", "DATABASE_URL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), Path(args.serve[1]), args.serve[2])
        return
    print(f"load average {os.getloadavg()[0]:.2f}; {args.concurrency} deliveries in flight, {args.seconds:g}s a store")
    report = {store: run_store(store, args) for store in args.stores.split(",")}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
