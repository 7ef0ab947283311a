"""What the benchmarks that start svc in a server process of their own share."""

from __future__ import annotations

import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import httpx


def machine() -> str:
    """The line each benchmark prints about the machine it measured on."""
    model = ""
    try:
        m = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        model = m.group(1).strip() if m else ""
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model or platform.machine()}), Python {platform.python_version()}"


def wait_for_server(server: subprocess.Popen[bytes], port_file: Path) -> str:
    """The base URL of a server started with `svc.operator.serve.serve_reporting_port`, once it answers."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"the server exited with {server.returncode}")
        if port_file.exists():
            base = f"http://127.0.0.1:{port_file.read_text()}"
            try:
                if httpx.get(f"{base}/v1/config", timeout=2).status_code == 200:
                    return base
            except httpx.HTTPError:
                pass
        time.sleep(0.05)
    sys.exit("the server did not start within 60 s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if stat[stat.rfind(")") + 2:].split()[1] == str(pid):
                found.append(int(name))
    return found


# Benches pin the server under test to core 0 and their load to core 1: the scheduler moving them
# about doubled the figures from one run to the next.
PINNED = (os.cpu_count() or 1) >= 2 and hasattr(os, "sched_setaffinity")


def pin(pid: int, core: int) -> None:
    """The process, its threads and every process below it, on `core` (nothing on one core)."""
    if not PINNED:
        return
    todo = [pid]
    while todo:
        p = todo.pop()
        subprocess.run(["taskset", "-a", "-p", "-c", str(core), str(p)], check=False, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        todo += children(p)


def free_dns_port() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 (DNS binds both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = int(tcp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    sys.exit("no port free for both TCP and UDP")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Server:
    """One `svc serve` of a checkout (with its .venv) on a data dir of its own; `settings`: more
    SVC_* variables."""

    checkout: Path
    data_dir: Path
    api_port: int = field(default_factory=free_port)
    edge_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_") and k != "PYTHONPATH"}
        env |= {"SVC_DATA_DIR": str(self.data_dir), "SVC_ENABLE_DEV_AUTH": "true", "SVC_PUBLIC_URL": self.api,
                "SVC_FREE_PROJECT_LIMIT": "1000000", "SVC_PRO_PROJECT_LIMIT": "1000000"} | self.settings
        log = (self.data_dir.parent / f"svc-{self.checkout.name}.log").open("ab")
        self.proc = subprocess.Popen([str(self.checkout / ".venv" / "bin" / "svc"), "serve", "--port",
                                      str(self.api_port), "--edge-port", str(self.edge_port), "--log-level",
                                      "warning"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                     cwd=self.checkout)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"svc of {self.checkout} exited: see {log.name}")
            try:
                if httpx.get(f"{self.api}/v1/config", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        sys.exit(f"svc of {self.checkout} did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None

    def nginx(self) -> int:
        return int((self.data_dir / "edge" / "nginx.pid").read_text())


@dataclass
class ApiClient:
    """A dev-login user of a benchmark's svc: the API, as that user in their personal org, and the
    edge (with `fresh`, a new connection for each request: what a first-time visitor sees)."""

    server: Server
    http: httpx.AsyncClient
    edge: httpx.AsyncClient
    org: str

    @classmethod
    async def login(cls, server: Server, subject: str, *, fresh: bool = True) -> Self:
        anon = httpx.AsyncClient(base_url=server.api, timeout=120)
        token = (await anon.post("/v1/auth/dev/login", json={"subject": subject})).json()["token"]
        await anon.aclose()
        http = httpx.AsyncClient(base_url=server.api, timeout=120, headers={"authorization": f"Bearer {token}"})
        org = next(o["slug"] for o in (await http.get("/v1/me")).json()["orgs"] if o["personal"])
        limits = httpx.Limits(max_keepalive_connections=0) if fresh else httpx.Limits()
        edge = httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.edge_port}", timeout=30, limits=limits)
        return cls(server, http, edge, org)

    async def create(self, name: str) -> str:
        """A new project: its default hostname."""
        r = await self.http.post(f"/v1/orgs/{self.org}/projects", json={"name": name})
        assert r.status_code == 201, r.text
        return str(r.json()["hostname"])

    async def deploy(self, name: str, bundle: bytes) -> None:
        r = await self.http.post(f"/v1/orgs/{self.org}/projects/{name}/deployments", content=bundle,
                                 headers={"content-type": "application/gzip"})
        assert r.status_code == 201, r.text

    async def served(self, host: str) -> str:
        """What the edge answers for the host's home page."""
        return (await self.edge.get("/", headers={"host": host})).text

    async def until(self, host: str, text: str, t0: float) -> float:
        """Seconds from `t0` (time.perf_counter) until the edge answers `text` for the host."""
        while (await self.served(host)) != text:
            if time.perf_counter() - t0 > 60:
                sys.exit(f"{host} did not answer {text!r} within 60 s")
        return time.perf_counter() - t0

    async def close(self) -> None:
        await self.http.aclose()
        await self.edge.aclose()
