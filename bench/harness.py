"""What the benchmarks that start svc in a server process of their own share."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

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
    """The base URL of a server started with `svc.cli.serve.serve_reporting_port`, once it answers."""
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
