"""Ingest benchmark: upload-to-live of a 10 MB, 2,000-file bundle against the floor.

    .venv/bin/python bench/ingest.py [--rounds 5] [--files 2000] [--mb 10] [--pin]

Upload-to-live: `POST /v1/orgs/{org}/projects/{project}/deployments` with the bundle as the body,
through a real HTTP server (uvicorn with the options of `svc serve`, SQLite store, files blob
store, no edge), timed from the first byte sent to the 201 (streamed validation and unpacking,
sha256, the blob kept, the site renamed into place, the version committed and made live).

The floor, measured in the same run on the same file and file system: in one process, sha256 of
the file plus `tarfile.open(mode="r:gz").extractall(filter="data")` into a fresh directory.

Each round uploads a bundle of its own (a different svc.json, so a different digest: every round
unpacks) and measures the floor on that same file; the rounds alternate, and the figures are the
medians. Goal: upload <= 1.5x the floor and under 1 s. --pin puts the server on core 0 and this
process (client and floor) on core 1."""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import httpx
from harness import machine, wait_for_server
from tests.support.config import configured

ROOT = Path(__file__).resolve().parents[1]
ORG, PROJECT = "bench", "site"


# --- the bundle -------------------------------------------------------------------------------------

def make_tree(files: int, target_bytes: int, seed: int = 1) -> list[tuple[str, bytes]]:
    """A site-like tree: a third of the files incompressible (images), the rest text (~3:1)."""
    rnd = random.Random(seed)
    words = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(3000)]
    per = target_bytes // files
    tree: list[tuple[str, bytes]] = []
    for i in range(files - 1):
        folder = f"assets/section-{i % 40:02d}"
        if i % 3 == 0:
            tree.append((f"{folder}/image-{i:04d}.bin", rnd.randbytes(int(per * 0.9))))
        else:
            n = int(per * 2.2)
            tree.append((f"{folder}/page-{i:04d}.html", b" ".join(rnd.choice(words) for _ in range(n // 6))[:n]))
    return tree


def calibrated_tree(files: int, mb: float) -> list[tuple[str, bytes]]:
    """A tree whose bundle is about `mb` MiB of gzip."""
    target = int(mb * 1024 * 1024)
    tree = make_tree(files, target)
    size = len(bundle(tree, 0))
    return make_tree(files, int(target * target / size))


def bundle(tree: list[tuple[str, bytes]], round_no: int) -> bytes:
    manifest = json.dumps({"name": "bench", "round": round_no}).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [("svc.json", manifest), *tree]:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)


# --- the floor --------------------------------------------------------------------------------------

def floor(path: Path, scratch: Path) -> float:
    dest = Path(tempfile.mkdtemp(dir=scratch))
    start = time.perf_counter()
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    with tarfile.open(path, mode="r:gz") as tar:
        tar.extractall(dest, filter="data")
    elapsed = time.perf_counter() - start
    shutil.rmtree(dest)
    return elapsed


# --- the server -------------------------------------------------------------------------------------

def serve(data_dir: Path, port_file: Path) -> None:
    from svc.app import create_app, default_adapters
    from svc.operator.serve import serve_reporting_port, server_config
    from svc.settings import Settings

    settings = configured(Settings(data_dir=data_dir, enable_dev_auth=True, database_url=None), edge_enabled=False)
    app = create_app(settings, default_adapters(settings))
    asyncio.run(serve_reporting_port(server_config(app, host="127.0.0.1", port=0, log_level="warning"), port_file))


def setup(c: httpx.Client) -> dict[str, str]:
    token = c.post("/v1/auth/dev/login", json={"subject": "bench-user"}).raise_for_status().json()["token"]
    auth = {"authorization": f"Bearer {token}"}
    c.post("/v1/orgs", json={"slug": ORG, "name": "Bench"}, headers=auth).raise_for_status()
    c.post(f"/v1/orgs/{ORG}/projects", json={"name": PROJECT}, headers=auth).raise_for_status()
    return auth


def upload(c: httpx.Client, auth: dict[str, str], body: bytes) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    r = c.post(f"/v1/orgs/{ORG}/projects/{PROJECT}/deployments", content=body,
               headers={**auth, "content-type": "application/gzip"})
    elapsed = time.perf_counter() - start
    if r.status_code != 201:
        raise SystemExit(f"upload failed: {r.status_code} {r.text}")
    return elapsed, dict(r.json())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--mb", type=float, default=10.0, help="compressed size of the bundle, about")
    parser.add_argument("--pin", action="store_true", help="server on core 0, client and floor on core 1")
    parser.add_argument("--serve", nargs=2, metavar=("DATA_DIR", "PORT_FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), Path(args.serve[1]))
        return

    pin = args.pin and (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
    print(f"machine: {machine()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
          f"{'; server pinned to core 0, client and floor to core 1' if pin else ''}")
    if pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {1})
    tree = calibrated_tree(args.files, args.mb)
    bodies = [bundle(tree, n) for n in range(args.rounds + 1)]
    unpacked = sum(len(d) for _, d in tree)
    print(f"bundle: {len(bodies[0]) / 1e6:.1f} MB gzip, {args.files} files, {unpacked / 1e6:.1f} MB unpacked")

    with tempfile.TemporaryDirectory(prefix="svc-bench-ingest-") as tmp:
        tmp_path = Path(tmp)
        scratch = tmp_path / "floor"
        scratch.mkdir()
        port_file = tmp_path / "port"
        log = (tmp_path / "server.log").open("wb")
        server = subprocess.Popen([*(["taskset", "-c", "0"] if pin else []), sys.executable, __file__, "--serve",
                                   str(tmp_path / "data"), str(port_file)], cwd=ROOT, stdout=log,
                                  stderr=subprocess.STDOUT)
        try:
            base = wait_for_server(server, port_file)
            with httpx.Client(base_url=base, timeout=120) as c:
                auth = setup(c)
                upload(c, auth, bodies[-1])  # warm-up
                rows = []
                for n in range(args.rounds):
                    path = tmp_path / f"bundle-{n}.tar.gz"
                    path.write_bytes(bodies[n])
                    up, dep = upload(c, auth, bodies[n])
                    fl = floor(path, scratch)
                    assert dep["fileCount"] == args.files and dep["live"] is True
                    rows.append((up, fl))
                    print(f"round {n + 1}: upload-to-live {up * 1000:7.1f} ms   floor {fl * 1000:7.1f} ms   "
                          f"ratio {up / fl:.2f}")
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()
    up = statistics.median(r[0] for r in rows)
    fl = statistics.median(r[1] for r in rows)
    ratio = statistics.median(r[0] / r[1] for r in rows)
    print(f"median: upload-to-live {up * 1000:.1f} ms, floor {fl * 1000:.1f} ms, ratio {ratio:.2f} "
          f"(goal <= 1.5 and < 1000 ms: {'met' if ratio <= 1.5 and up < 1.0 else 'NOT met'})")


if __name__ == "__main__":
    main()
