"""env.storage: objects put and got by a worker, against the same calls made straight to the same
S3 store, in one run; and svc's and workerd's memory while a worker streams a 1 GiB object.

    .venv/bin/python bench/storage.py [--requests 100] [--rounds 3] [--concurrency 4] [--big-mib 1024]
                                      [--skip throughput,memory]

The store: moto's S3 server (tests/support/s3.py) in a process of its own, one bucket. svc: a real
`svc serve` (SQLite, its edge, one workerd loading process) with SVC_STORAGE_BACKEND=s3 on that
bucket, a project granted storage whose worker answers `PUT /o/<key>` with
`env.storage.put(key, request.body)` and `GET /o/<key>` with `(await env.storage.get(key)).body`.
The benchmark sends those requests through the edge (visitor -> nginx -> workerd -> the Storage
entrypoint -> svc's runtime route -> objects.py's grant, key, quota reservation -> the S3 backend
-> moto, and back, the bodies streamed each hop). The peer: boto3's put_object and get_object
(the body read whole) on the same moto, same bucket, same sizes, `--concurrency` calls in flight
(threads, a client each) as the svc path has requests in flight. The two alternate over the
rounds; the median round counts. Objects of 10 KiB and 1 MiB. Goal: svc >= 0.7x direct. Two
more paths say where svc's time goes: svc's runtime route alone (what the Storage entrypoint
calls, with the runtime's token: svc's part), and the floor (the same bodies through the edge and
the worker, which stores nothing: the edge's and workerd's part).

svc (and its children: workerd, nginx) run on core 0, and so do the direct calls (a process of
their own: svc's S3 calls run on that core on its path); the benchmark's HTTP client and moto on
core 1.

Memory: a worker puts a `--big-mib` object it makes as it goes (a FixedLengthStream fed 1 MiB at
a time: the edge takes request bodies up to 100 MB, so this one is not a visitor's), then a
visitor GETs it through the edge, the worker returning the object's body as its response. The
peak RSS (VmHWM) and the RSS now of svc's process and of every workerd process, before and after,
and the highest RSS sampled during each. Goal: flat (growth far below the object's size)."""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# Run as `.venv/bin/python bench/storage.py`: the tests' helpers are imported from the repository.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from harness import PINNED, ApiClient, Server, children, machine, pin
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, client, create_bucket, moto_server

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.7
BUCKET = "bench-objects"
SIZES = {"10 KiB": 10 * 1024, "1 MiB": 1024 * 1024}
SVC_CORE, LOAD_CORE = 0, 1

WORKER = b"""
const floors = {};

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const key = decodeURIComponent(url.pathname.slice(3));
    if (url.pathname.startsWith("/o/")) {
      if (request.method === "PUT") {
        const object = await env.storage.put(key, request.body);
        return Response.json({ size: object.size });
      }
      const object = await env.storage.get(key);
      if (object === null) return new Response("missing", { status: 404 });
      return new Response(object.body);
    }
    if (url.pathname.startsWith("/z/")) {
      // The floor: the same requests through the edge and the worker, no env.storage.
      if (request.method === "PUT") {
        const reader = request.body.getReader();
        let size = 0;
        for (let read = await reader.read(); !read.done; read = await reader.read()) size += read.value.byteLength;
        return Response.json({ size });
      }
      const size = Number(url.searchParams.get("size"));
      return new Response((floors[size] ??= new Uint8Array(size).fill(7)));
    }
    if (url.pathname === "/big") {
      // An object made as it is sent: the same 1 MiB written again and again.
      const mib = Number(url.searchParams.get("mib"));
      const chunk = new Uint8Array(1024 * 1024).map((_, i) => i % 251);
      const { readable, writable } = new FixedLengthStream(mib * chunk.byteLength);
      const writing = (async () => {
        const writer = writable.getWriter();
        for (let i = 0; i < mib; i++) await writer.write(chunk);
        await writer.close();
      })();
      const [object] = await Promise.all([env.storage.put("big.bin", readable), writing]);
      return Response.json({ size: object.size });
    }
    return new Response("no such path", { status: 404 });
  },
};
"""


def bundle() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in {"svc.json": b"{}", "worker/index.js": WORKER}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def store_settings(url: str) -> dict[str, str]:
    """svc's object store on moto's bucket (SVC_S3_*: the endpoint and keys it shares with the blob store)."""
    return {"SVC_STORAGE_BACKEND": "s3", "SVC_STORAGE_S3_BUCKET": BUCKET, "SVC_S3_ENDPOINT_URL": url,
            "SVC_S3_ACCESS_KEY_ID": ACCESS_KEY, "SVC_S3_SECRET_ACCESS_KEY": SECRET_KEY}


def token(server: Server) -> str:
    """The runtime's token (svc writes it into workerd's configuration at each start)."""
    config = (server.data_dir / "workers" / "serve-0" / "config.capnp").read_text()
    found = re.search(r'name = "TOKEN", text = "([^"]+)"', config)
    if found is None:
        sys.exit("no runtime token in workerd's configuration")
    return found[1]


def pro(data_dir: Path, org: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")} | {"SVC_DATA_DIR": str(data_dir)}
    subprocess.run([str(ROOT / ".venv" / "bin" / "svc"), "admin", "plan", org, "pro"], env=env, check=True,
                   stdout=subprocess.DEVNULL)


# --- memory, from /proc ---

def status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


def workerds(pid: int) -> list[int]:
    """Every workerd process below svc's."""
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            todo.append(child)
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == "workerd":
                    found.append(child)
            except OSError:
                pass
    return found


def memory(pid: int) -> dict[str, dict[str, int]]:
    return {"svc": status(pid), **{f"workerd {p}": status(p) for p in workerds(pid)}}


class Sampler:
    """The highest RSS of each process, sampled every 20 ms while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak: dict[str, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.done.is_set():
            try:
                for name, values in memory(self.pid).items():
                    self.peak[name] = max(self.peak.get(name, 0), values["VmRSS"])
            except OSError:
                pass
            self.done.wait(0.02)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


# --- the two paths ---

class Failed(Exception):
    """A request through svc that did not answer 200 (the worker's logs are printed)."""


Send = Callable[[str, str, bytes], Awaitable[httpx.Response]]


def through_worker(edge: httpx.AsyncClient, host: str) -> Send:
    """The svc path: a visitor's request through the edge to the worker, which calls env.storage."""
    async def send(op: str, key: str, data: bytes) -> httpx.Response:
        if op == "put":
            return await edge.put(f"/o/{key}", content=data, headers={"host": host})
        return await edge.get(f"/o/{key}", headers={"host": host})

    return send


def worker_alone(edge: httpx.AsyncClient, host: str) -> Send:
    """The floor: the same bodies through the edge and the worker, which neither stores nor reads
    any object (it reads the put's body, and answers a get with bytes it holds)."""
    async def send(op: str, key: str, data: bytes) -> httpx.Response:
        if op == "put":
            return await edge.put(f"/z/{key}", content=data, headers={"host": host})
        return await edge.get(f"/z/{key}", params={"size": str(len(data))}, headers={"host": host})

    return send


def runtime_route(api: httpx.AsyncClient, project_id: str, token: str) -> Send:
    """svc's runtime route alone (what the Storage entrypoint calls), with the runtime's token: where
    the svc path's time goes, svc's part against the edge's and workerd's."""
    url = f"/v1/runtime/projects/{project_id}/storage/object"
    headers = {"x-svc-runtime-token": token}

    async def send(op: str, key: str, data: bytes) -> httpx.Response:
        if op == "put":
            return await api.put(url, params={"key": f"route-{key}"}, content=data, headers=headers)
        return await api.get(url, params={"key": f"route-{key}"}, headers=headers)

    return send


async def svc_round(send: Send, op: str, data: bytes, keys: list[str], concurrency: int) -> float:
    """Requests/s of `op` ("put" or "get"), `concurrency` in flight."""
    todo = iter(keys)

    async def one_by_one() -> None:
        for key in todo:
            r = await send(op, key, data)
            if r.status_code == 200 and op == "get" and len(r.content) != len(data):
                raise Failed(f"svc: {key} came back with {len(r.content)} bytes")
            if r.status_code != 200:
                raise Failed(f"svc: {op} {key} answered {r.status_code}: {r.text[:300]}")

    t0 = time.perf_counter()
    await asyncio.gather(*(one_by_one() for _ in range(concurrency)))
    return len(keys) / (time.perf_counter() - t0)


def direct_round(url: str, op: str, size: int, keys: list[str], concurrency: int) -> float:
    """Calls/s of put_object or get_object straight to the store, from a process of its own on svc's
    core (svc's own S3 calls run there on the svc path); the clients made before the clock starts."""
    cmd = [sys.executable, __file__, "--direct", json.dumps({"url": url, "op": op, "size": size, "keys": keys,
                                                            "concurrency": concurrency})]
    if PINNED:
        cmd = ["taskset", "-c", str(SVC_CORE), *cmd]
    return float(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def direct(job: dict[str, Any]) -> float:
    """(In the process direct_round starts.)"""
    op, data, concurrency = job["op"], os.urandom(job["size"]), job["concurrency"]
    clients = [client(job["url"]) for _ in range(concurrency)]
    lock = threading.Lock()
    todo = iter(job["keys"])

    def one_by_one(s3: Any) -> None:
        while True:
            with lock:
                key = next(todo, None)
            if key is None:
                return
            if op == "put":
                s3.put_object(Bucket=BUCKET, Key=f"direct/{key}", Body=data)
            elif len(s3.get_object(Bucket=BUCKET, Key=f"direct/{key}")["Body"].read()) != len(data):
                sys.exit(f"direct: {key} came back short")

    with ThreadPoolExecutor(concurrency) as pool:
        t0 = time.perf_counter()
        for done in [pool.submit(one_by_one, s3) for s3 in clients]:
            done.result()
        return len(job["keys"]) / (time.perf_counter() - t0)


async def throughput(paths: dict[str, Send], url: str, args: argparse.Namespace) -> list[tuple[str, dict[str, float]]]:
    """Per size and operation, the median round's rate of each path ("svc", "route", "direct")."""
    results = []
    for label, size in SIZES.items():
        data = os.urandom(size)
        rates: dict[tuple[str, str], list[float]] = {}
        rounds = [("warm-up", max(4, args.requests // 10))] + [(f"round {i + 1}", args.requests)
                                                                for i in range(args.rounds)]
        for name, n in rounds:
            keys = [f"{label.replace(' ', '')}-{name.replace(' ', '')}-{i}" for i in range(n)]
            for op in ("put", "get"):
                got = {path: await svc_round(send, op, data, keys, args.concurrency) for path, send in paths.items()}
                got["direct"] = await asyncio.to_thread(direct_round, url, op, size, keys, args.concurrency)
                if name == "warm-up":
                    continue
                for path, rate in got.items():
                    rates.setdefault((op, path), []).append(rate)
                print(f"  {label:7} {name}: {op} " + ", ".join(f"{path} {rate:7.1f}/s" for path, rate in got.items())
                      + f" ({got['svc'] / got['direct']:.2f}x)")
        for op in ("put", "get"):
            results.append((f"{op} {label}", {path: statistics.median(rates[(op, path)])
                                              for path in (*paths, "direct")}))
    return results


def mib(kib: int) -> str:
    return f"{kib / 1024:7.1f} MiB"


async def big_object(server: Server, edge: httpx.AsyncClient, host: str, size_mib: int) -> bool:
    """The memory of svc and workerd before and after a worker streams the object each way."""
    assert server.proc is not None
    pid = server.proc.pid
    before = memory(pid)
    with Sampler(pid) as put_peak:
        t0 = time.perf_counter()
        r = await edge.post("/big", params={"mib": str(size_mib)}, headers={"host": host},
                            timeout=httpx.Timeout(3600))
        put_s = time.perf_counter() - t0
    if r.status_code != 200 or r.json()["size"] != size_mib * 1024 * 1024:
        sys.exit(f"the big put answered {r.status_code}: {r.text[:300]}")
    got = 0
    digest = hashlib.sha256()
    with Sampler(pid) as get_peak:
        t0 = time.perf_counter()
        async with edge.stream("GET", "/o/big.bin", headers={"host": host}, timeout=httpx.Timeout(3600)) as answer:
            async for chunk in answer.aiter_raw():
                got += len(chunk)
                digest.update(chunk)
        get_s = time.perf_counter() - t0
    if got != size_mib * 1024 * 1024:
        sys.exit(f"the big get gave {got} bytes")
    after = memory(pid)
    print(f"\n  a {size_mib} MiB object: the worker's put {put_s:.1f} s ({size_mib / put_s:.0f} MiB/s), "
          f"a visitor's get through the worker {get_s:.1f} s ({size_mib / get_s:.0f} MiB/s)")
    flat = True
    for name in before:
        if name not in after:
            continue
        grew = after[name]["VmHWM"] - before[name]["VmHWM"]
        flat &= grew < size_mib * 1024 // 10
        print(f"    {name:14} RSS {mib(before[name]['VmRSS'])} -> {mib(after[name]['VmRSS'])}; peak (VmHWM) "
              f"{mib(before[name]['VmHWM'])} -> {mib(after[name]['VmHWM'])} (+{grew / 1024:.1f} MiB); "
              f"sampled peak during put {mib(put_peak.peak.get(name, 0))}, get {mib(get_peak.peak.get(name, 0))}")
    return flat


async def run(args: argparse.Namespace, work: Path, url: str) -> None:
    server = Server(checkout=ROOT, data_dir=work / "serve",
                    # The edge gives up on a worker silent for SVC_WORKER_TIMEOUT_SECONDS (30 s): the big
                    # put answers once the whole object is stored.
                    settings={**store_settings(url), "SVC_WORKER_PROCESSES": "1", "SVC_PROJECT_DB_ENABLED": "false",
                              "SVC_WORKER_TIMEOUT_SECONDS": "900"})
    server.data_dir.mkdir(parents=True)
    server.start()
    try:
        assert server.proc is not None
        pin(server.proc.pid, SVC_CORE)
        app = await ApiClient.login(server, "bench", fresh=False)
        # The free plan's 1 GiB would not hold the rounds' objects and the big one: a pro org's 100 GiB.
        pro(server.data_dir, app.org)
        host = await app.create("files")
        await app.deploy("files", bundle())
        r = await app.http.post(f"/v1/orgs/{app.org}/projects/files/storage")
        if r.status_code != 200:
            sys.exit(f"the grant answered {r.status_code}: {r.text}")
        limits = httpx.Limits(max_connections=args.concurrency * 2)
        project_id = (await app.http.get(f"/v1/orgs/{app.org}/projects/files")).json()["id"]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.edge_port}", timeout=120,
                                     limits=limits) as edge, \
                httpx.AsyncClient(base_url=server.api, timeout=120, limits=limits) as api:
            paths = {"svc": through_worker(edge, host), "route": runtime_route(api, project_id, token(server)),
                     "floor": worker_alone(edge, host)}
            try:
                results = await throughput(paths, url, args) if "throughput" not in args.skip else []
            except Failed as failed:
                logs = (await app.http.get(f"/v1/orgs/{app.org}/projects/files/logs")).json()["lines"]
                errors = [line for line in logs if line["level"] in ("error", "5xx")][-4:]
                said = "\n".join((work / f"svc-{ROOT.name}.log").read_text(errors="replace").splitlines()[-30:])
                sys.exit(f"{failed}\nthe worker's errors: {json.dumps(errors, indent=1)}\nsvc's log:\n{said}")
            print("\n  median rounds (route: svc's runtime route alone, no edge, no worker; floor: the edge and "
                  "the worker alone, no env.storage):")
            met = True
            for name, rate in results:
                ratio = rate["svc"] / rate["direct"]
                met &= ratio >= GOAL
                print(f"    {name:11} svc {rate['svc']:7.1f}/s, direct to S3 {rate['direct']:7.1f}/s: {ratio:.2f}x "
                      f"(goal >= {GOAL}x: {'met' if ratio >= GOAL else 'NOT met'}); route {rate['route']:7.1f}/s, "
                      f"floor {rate['floor']:7.1f}/s")
            if "memory" not in args.skip:
                flat = await big_object(server, edge, host, args.big_mib)
                print(f"  memory flat (each process's peak grew by under a tenth of the object): "
                      f"{'yes' if flat else 'NO'}")
        await app.close()
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--skip", default="", help="leave out parts: throughput, memory (comma-separated)")
    ap.add_argument("--direct", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.direct:
        print(direct(json.loads(args.direct)))
        return
    if PINNED:
        os.sched_setaffinity(0, {LOAD_CORE})
    print(f"storage: env.storage through a worker against boto3 straight to the same S3 (moto); {machine()}; "
          f"load average {os.getloadavg()[0]:.2f}; {args.concurrency} in flight")
    with tempfile.TemporaryDirectory(prefix="svc-bench-storage-") as where:
        work = Path(where)
        with moto_server(work) as url:
            create_bucket(url, BUCKET)
            asyncio.run(run(args, work, url))


if __name__ == "__main__":
    main()
