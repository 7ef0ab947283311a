"""Start-up of `svc --help`, `svc whoami` and `svc admin`: this tree against another, in the same run.

    git archive main src/svc | tar -x -C /tmp/before      # the tree to compare with
    .venv/bin/python bench/cli.py --before /tmp/before/src [--runs 30] [--no-bytecode]

Each case runs a whole `svc` process (the console script's entry point), the two trees alternating
run by run (the order flipping each round) so that a neighbour's load falls on both alike; the
median of the wall time and of the CPU time (user + system of the child, which the machine's load
disturbs less) after two warm-up rounds, and the ratio after/before. `whoami` runs with nothing
listening at the address (an error line), and signed in (SVC_TOKEN) against a small stand-in API
on a thread of this process: the table, and `--json`. `svc admin` runs on the server against the
state store: its help, and a plan change (`svc admin plan`) on a store each tree made before the
runs (its own SQLite data directory, migrated by its own code). "before" is the tree at --before (first on
PYTHONPATH), "after" this checkout (or --after). With bytecode (the default), each tree gets its own
PYTHONPYCACHEPREFIX; --no-bytecode sets PYTHONDONTWRITEBYTECODE=1. The outputs of the two trees are
compared too: a difference is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The console script's entry point (svc.entry since the server's commands left the client; a tree
# from before that has it in svc.cli.main).
ENTRY = ("import sys\ntry:\n    from svc.entry import main\nexcept ImportError:\n"
         "    from svc.cli.main import main\nsys.exit(main())")
ME = {"user": {"id": "u1", "subject": "ann", "provider": "dev", "email": "ann@example.com", "name": "Ann"},
      "orgs": [{"slug": "ann", "name": "Ann", "role": "owner", "plan": "free", "personal": True}]}


class _Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps(ME if self.path.startswith("/v1/me") else {"identityProvider": None}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _made_store(env: dict[str, str]) -> None:
    """A migrated SQLite store with the org `bench`, made by the tree's own code."""
    made = ("import asyncio\nfrom svc.app import server_context\nfrom svc.settings import Settings\n"
            "from svc.domains.orgs import queries\nfrom svc.models import Org, Plan\n"
            "from svc.kit.clock import utcnow\nfrom svc.uow import unit_of_work\n"
            "async def main():\n    async with server_context(Settings()) as ctx, unit_of_work(ctx) as uow:\n"
            "        uow.session.add(Org(id='org_bench', slug='bench', name='bench', plan=Plan.free,"
            " personal=False, created_at=utcnow()))\nasyncio.run(main())\n")
    subprocess.run([sys.executable, "-c", made], env=env, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", required=True, help="the other tree's src directory")
    parser.add_argument("--after", help="this tree's src directory (default: as installed)")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--no-bytecode", action="store_true")
    args = parser.parse_args()

    api = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-cli-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "PYTHON"))}
    env |= {"XDG_CONFIG_HOME": str(tmp), "HOME": str(tmp), "COLUMNS": "120"}
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    live = {"SVC_API_URL": f"http://127.0.0.1:{api.server_port}", "SVC_TOKEN": "t"}
    cases = {
        "svc --help": (["--help"], {}),
        "svc whoami (nothing listens)": (["whoami"], {"SVC_API_URL": f"http://127.0.0.1:{dead}"}),
        "svc whoami (signed in, table)": (["whoami"], live),
        "svc whoami --json (signed in)": (["whoami", "--json"], live),
        "svc admin --help": (["admin", "--help"], {}),
        "svc admin plan ORG pro": (["admin", "plan", "bench", "pro"], {}),
    }
    trees: dict[str, dict[str, str]] = {"before": {"PYTHONPATH": args.before},
                                        "after": {"PYTHONPATH": args.after} if args.after else {}}
    if not args.no_bytecode:
        for name, extra in trees.items():
            extra["PYTHONPYCACHEPREFIX"] = str(tmp / f"pyc-{name}")
    for name, extra in trees.items():
        # The server's commands run on a store svc made (and the org they change is there).
        extra["SVC_DATA_DIR"] = str(tmp / f"data-{name}")
        _made_store(env | extra)
    wall: dict[tuple[str, str], list[float]] = {(c, t): [] for c in cases for t in trees}
    cpu: dict[tuple[str, str], list[float]] = {(c, t): [] for c in cases for t in trees}
    outputs: dict[tuple[str, str], tuple[int, str, str]] = {}
    for i in range(args.runs + 2):
        for case, (argv, extra) in cases.items():
            for tree in (list(trees) if i % 2 == 0 else list(reversed(trees))):
                c0, t0 = _cpu(), time.perf_counter()
                p = subprocess.run([sys.executable, "-c", ENTRY, *argv], env=env | extra | trees[tree],
                                   capture_output=True, text=True)
                t1, c1 = time.perf_counter(), _cpu()
                outputs[(case, tree)] = (p.returncode, p.stdout, p.stderr)
                if i >= 2:
                    wall[(case, tree)].append(t1 - t0)
                    cpu[(case, tree)].append(c1 - c0)
    api.shutdown()
    print(f"{args.runs} runs of each after 2 warm-ups, the trees alternating; bytecode "
          f"{'off' if args.no_bytecode else 'on'}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':32} {'wall: before':>13} {'after':>7} {'ratio':>6}   {'CPU: before':>12} {'after':>7} {'ratio':>6}")
    for case in cases:
        wb, wa = (statistics.median(wall[(case, t)]) * 1000 for t in trees)
        cb, ca = (statistics.median(cpu[(case, t)]) * 1000 for t in trees)
        print(f"{case:32} {wb:10.0f} ms {wa:4.0f} ms {wa / wb:6.2f}   {cb:9.0f} ms {ca:4.0f} ms {ca / cb:6.2f}")
    for case in cases:
        if outputs[(case, "before")] != outputs[(case, "after")]:
            print(f"the outputs differ for {case}:", outputs[(case, "before")], outputs[(case, "after")], sep="\n")


if __name__ == "__main__":
    main()
