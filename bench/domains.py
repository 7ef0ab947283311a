"""Domains: a purchase through svc's API end to end, against the registrar calls it makes, in one run.

    .venv/bin/python bench/domains.py [--purchases 30] [--registrar-ms 50]

The registrar is svc's fake (svc.adapters.registrar.fake: a real HTTP server) in a process of its
own, pinned with this process to core 1. svc is its app served as `svc serve` serves it
(`svc.operator.serve.server_config`), SQLite, the worker running, SVC_REGISTRAR=fake with
SVC_REGISTRAR_URL naming that fake, and its managed PowerDNS (a purchase creates the domain's
zone; SVC_TRUST_OWN_ZONES as `make run` sets it), all on core 0.

Each purchase is `POST /v1/orgs/{org}/domains` with a contact, a new name each time, one at a time,
timed by this process from the request to the 201. The saga behind it (src/svc/domains/domain_names/
saga.py) makes five registrar calls: check (is it for sale), check again and charge (payment),
register (registration), nameservers (after the zone is written). The peer, in the same run,
alternated purchase by purchase: the same five calls for another new name made straight from this
process with svc's own registrar client (`RegistrarClient`), timed the same way. Also printed: the
registrar's own time for svc's five calls (the sum of their durationMs in the fake's call log).

Overhead per step = (svc's purchase - the peer's five calls) / 4 steps: the first check, payment,
registration, zone + nameservers (the saga's three and the check that starts it). p50 and p95 over
the purchases, with the fake answering at once and again with every call answered after
--registrar-ms (`POST /_fake/latency`), so that a registrar's pace hides nothing. svc's server
records from the outside (no change to svc) how long each saga step and each of its registrar
calls took: the breakdown of where svc's own time goes. After each purchase the benchmark waits
until the zone's jobs (dns.sync, dns.delegation) are done, so each purchase meets a quiet server.
Goal (issue 31): overhead under 50 ms per step at p95, in both passes, against the peer and
against the fake's log."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from harness import PINNED, free_dns_port, machine, pct, pin, wait_for_server
from starlette.requests import Request
from starlette.responses import JSONResponse
from tests.support.config import configured

ROOT = Path(__file__).resolve().parents[1]
KEY = "fake-registrar-key"
GOAL_MS = 50.0
STEPS = ("check", "payment", "registration", "zone + nameservers")
SAGA_STEPS = {"_start": "check", "_pay": "payment", "_register": "registration", "_delegate": "zone + nameservers"}
SVC_CALLS = ["check", "check", "charge", "register", "nameservers"]
CONTACT = {"name": "Bench Example", "email": "bench@example.net", "phone": "+1.5555551234", "street": "1 Main St",
           "city": "Springfield", "postalCode": "12345", "country": "US"}
NAMESERVERS = "ns1.svc.localhost.,ns2.svc.localhost."
WARMUP = 3
QUIET_TIMEOUT = 30.0


# --- the processes ---

def serve_registrar(port_file: Path) -> None:
    from svc.adapters.registrar.fake import FakeRegistrar
    from svc.operator.serve import serve_reporting_port, server_config

    fake = FakeRegistrar(api_key=KEY)

    async def up(_: Request) -> JSONResponse:  # what harness.wait_for_server asks
        return JSONResponse({})

    fake.app.add_route("/v1/config", up)
    asyncio.run(serve_reporting_port(server_config(fake.app, host="127.0.0.1", port=0, log_level="warning"),
                                     port_file))


def serve_svc(port_file: Path, data_dir: Path, registrar: str, dns_port: int, stages: Path) -> None:
    """svc's app on the fake registrar and its managed PowerDNS, as `svc serve` serves it."""
    from svc.app import create_app, default_adapters
    from svc.operator.serve import serve_reporting_port, server_config
    from svc.settings import Settings

    instrument(stages)
    settings = configured(Settings(data_dir=data_dir, enable_dev_auth=True, database_url=None), registrar="fake",
                          registrar_url=registrar, dns_host="127.0.0.1", dns_port=dns_port, pdns_api_url=None,
                          pdns_api_key=None, nameservers=NAMESERVERS, trust_own_zones=True)
    app = create_app(settings, default_adapters(settings), run_nameserver=True)
    asyncio.run(serve_reporting_port(server_config(app, host="127.0.0.1", port=0, log_level="warning"), port_file))


def instrument(stages: Path) -> None:
    """One line in `stages` per saga step and per registrar call (seconds), wrapped from the outside."""
    from svc.adapters.registrar.client import RegistrarClient
    from svc.domains.domain_names import saga

    out = stages.open("a", buffering=1)

    def timed(owner: Any, name: str, what: str) -> None:
        inner = getattr(owner, name)

        @functools.wraps(inner)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await inner(*args, **kwargs)
            finally:
                out.write(json.dumps({"what": what, "name": name, "s": time.perf_counter() - t0}) + "\n")

        setattr(owner, name, wrapper)

    for step in SAGA_STEPS:
        timed(saga, step, "step")
    timed(RegistrarClient, "_call", "call")


# svc (and its PowerDNS) on core 0; this process and the fake registrar on core 1.
SVC_CORE, LOAD_CORE = 0, 1



def start(args: list[str], port_file: Path, core: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, __file__, *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=ROOT)
    pin(proc.pid, core)
    base = wait_for_server(proc, port_file)
    pin(proc.pid, core)  # again: the PowerDNS it started meanwhile
    return proc, base



# --- the measurements ---

class Run:
    """The two servers and what this process measures of them."""

    def __init__(self, svc: str, registrar: str, store: Path, stages: Path) -> None:
        from svc.adapters.registrar.client import RegistrarClient
        from svc.adapters.registrar.port import Contact

        self.contact = Contact(name=CONTACT["name"], email=CONTACT["email"], phone=CONTACT["phone"],
                               street=CONTACT["street"], city=CONTACT["city"], postal_code=CONTACT["postalCode"],
                               country=CONTACT["country"])
        self.svc_base, self.registrar_base, self.store, self.stages = svc, registrar, store, stages
        self.http = httpx.AsyncClient(base_url=svc, timeout=60)
        self.admin = httpx.AsyncClient(base_url=registrar, timeout=60)
        self.direct = RegistrarClient(registrar, KEY)  # svc's own client, in this process
        self.org = ""
        self.stage_offset = 0
        self.calls_seen = 0

    async def login(self) -> None:
        token = (await self.http.post("/v1/auth/dev/login", json={"subject": "bench"})).json()["token"]
        self.http.headers["authorization"] = f"Bearer {token}"
        me = (await self.http.get("/v1/me")).json()
        self.org = next(o["slug"] for o in me["orgs"] if o["personal"])

    async def latency(self, ms: float) -> None:
        r = await self.admin.post("/_fake/latency", json={"ms": ms})
        if r.status_code != 200:
            sys.exit(f"the fake registrar refused its latency: {r.status_code} {r.text[:200]}")

    async def buy(self, name: str) -> float:
        """Seconds from the request to svc's 201."""
        t0 = time.perf_counter()
        r = await self.http.post(f"/v1/orgs/{self.org}/domains", json={"name": name, "contact": CONTACT})
        taken = time.perf_counter() - t0
        if r.status_code != 201 or r.json()["status"] != "active":
            sys.exit(f"the purchase of {name} failed: {r.status_code} {r.text[:300]}")
        return taken

    async def peer(self, name: str) -> float:
        """Seconds the saga's five registrar calls take, made straight from this process."""
        reg = self.direct
        t0 = time.perf_counter()
        quote = (await reg.check([name]))[0]
        assert quote.available and quote.price_cents is not None, quote
        quote = (await reg.check([name]))[0]
        assert quote.price_cents is not None
        charge = await reg.charge(name=name, years=1, amount_cents=quote.price_cents, key=f"peer:{name}:1")
        await reg.register(name=name, years=1, contact=self.contact, charge_id=charge)
        await reg.set_nameservers(name, [n.rstrip(".") for n in NAMESERVERS.split(",")])
        return time.perf_counter() - t0

    async def fake_calls(self) -> list[dict[str, Any]]:
        """The fake's log of the calls made since the last time asked."""
        calls = (await self.admin.get("/_fake/calls")).json()["calls"]
        new, self.calls_seen = calls[self.calls_seen:], len(calls)
        return list(new)

    def stage_lines(self) -> list[dict[str, Any]]:
        """svc's server's lines about its saga steps and registrar calls since the last time asked."""
        with self.stages.open("rb") as f:
            f.seek(self.stage_offset)
            text = f.read()
        done = text.rfind(b"\n") + 1
        self.stage_offset += done
        return [json.loads(line) for line in text[:done].splitlines()]

    async def quiet(self) -> None:
        """Until the zone's jobs are done (dns.sync, dns.delegation), so the next purchase meets a quiet server."""
        deadline = time.monotonic() + QUIET_TIMEOUT
        while jobs_left(self.store):
            if time.monotonic() > deadline:
                print(f"    (svc's zone jobs still queued after {QUIET_TIMEOUT:g} s; going on)")
                return
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        await self.http.aclose()
        await self.admin.aclose()
        await self.direct.aclose()


def jobs_left(store: Path) -> int:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30)
    try:
        row = con.execute("SELECT count(*) FROM jobs WHERE kind IN ('dns.sync', 'dns.delegation') AND status IN "
                          "('queued', 'running')").fetchone()
    finally:
        con.close()
    return int(row[0])


async def one_pass(run: Run, label: str, delay_ms: float, purchases: int) -> dict[str, Any]:
    """`purchases` through svc, each followed by the peer's five calls for another name."""
    await run.latency(delay_ms)
    svc: list[float] = []
    peer: list[float] = []
    logged: list[float] = []
    steps: dict[str, list[float]] = {s: [] for s in STEPS}
    own: dict[str, list[float]] = {s: [] for s in STEPS}
    rest: list[float] = []
    for i in range(-WARMUP, purchases):
        await run.fake_calls()
        run.stage_lines()
        bought = await run.buy(f"svc-{label}-{i + WARMUP:04d}.com")
        made = await run.fake_calls()
        lines = run.stage_lines()
        await run.quiet()
        direct = await run.peer(f"peer-{label}-{i + WARMUP:04d}.com")
        if [c["step"] for c in made] != SVC_CALLS or any(c["status"] >= 300 for c in made):
            sys.exit(f"svc's purchase made other calls than {SVC_CALLS}: {made}")
        if i < 0:
            continue
        svc.append(bought)
        peer.append(direct)
        logged.append(sum(c["durationMs"] for c in made) / 1000)
        # Each step's lines: its registrar calls, then the step itself (the wrapper writes on return).
        calls: list[float] = []
        in_steps = 0.0
        for line in lines:
            if line["what"] == "call":
                calls.append(line["s"])
            else:
                step = SAGA_STEPS[line["name"]]
                steps[step].append(line["s"])
                own[step].append(line["s"] - sum(calls))
                in_steps += line["s"]
                calls = []
        rest.append(bought - in_steps)
    per_step = [(s - p) / len(STEPS) for s, p in zip(svc, peer, strict=True)]
    per_step_log = [(s - g) / len(STEPS) for s, g in zip(svc, logged, strict=True)]
    return {"svc": svc, "peer": peer, "logged": logged, "per_step": per_step, "per_step_log": per_step_log,
            "steps": steps, "own": own, "rest": rest}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def report(title: str, r: dict[str, Any]) -> tuple[float, float]:
    print(f"\n  {title} ({len(r['svc'])} purchases):")
    print(f"    svc's purchase, end to end        p50 {ms(pct(r['svc'], 0.5))}  p95 {ms(pct(r['svc'], 0.95))}")
    print(f"    peer: the 5 calls, direct         p50 {ms(pct(r['peer'], 0.5))}  p95 {ms(pct(r['peer'], 0.95))}")
    print(f"    the fake's own time for svc's 5   p50 {ms(pct(r['logged'], 0.5))}  p95 {ms(pct(r['logged'], 0.95))}"
          f"  (its call log, whole ms)")
    p50, p95 = pct(r["per_step"], 0.5) * 1000, pct(r["per_step"], 0.95) * 1000
    log50, log95 = pct(r["per_step_log"], 0.5) * 1000, pct(r["per_step_log"], 0.95) * 1000
    print(f"    overhead per step (/{len(STEPS)}), vs the peer          p50 {p50:6.1f} ms  p95 {p95:6.1f} ms")
    print(f"    overhead per step (/{len(STEPS)}), vs the fake's log    p50 {log50:6.1f} ms  p95 {log95:6.1f} ms")
    print("    where svc's time goes (p50; own = the step less its registrar calls as svc's client saw them):")
    for step in STEPS:
        print(f"      {step:<20} step {ms(pct(r['steps'][step], 0.5))}   own {ms(pct(r['own'][step], 0.5))}")
    print(f"      {'outside the steps':<20}      {ms(pct(r['rest'], 0.5))}   (HTTP, auth, the saga's "
          "reads before its steps, the answer)")
    return p50, p95


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--purchases", type=int, default=30)
    ap.add_argument("--registrar-ms", type=float, default=50.0, help="the second pass's delay of every call")
    ap.add_argument("--serve-registrar", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--serve-svc", nargs=5, metavar=("PORT_FILE", "DATA_DIR", "REGISTRAR", "DNS_PORT", "STAGES"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_registrar:
        serve_registrar(args.serve_registrar)
        return
    if args.serve_svc:
        port_file, data_dir, registrar, dns_port, stages = args.serve_svc
        serve_svc(Path(port_file), Path(data_dir), registrar, int(dns_port), Path(stages))
        return

    if PINNED:
        os.sched_setaffinity(0, {LOAD_CORE})
    where = "svc and its PowerDNS on core 0, this process and the fake registrar on core 1" if PINNED else "unpinned"
    print(f"domains: a purchase through svc against the registrar calls it makes; {machine()}; load average "
          f"{os.getloadavg()[0]:.2f}; {where}")
    print(f"  steps: {', '.join(STEPS)} ({len(STEPS)}); svc's registrar calls: {', '.join(SVC_CALLS)}")
    work = Path(tempfile.mkdtemp(prefix="svc-bench-domains-"))
    procs: list[subprocess.Popen[bytes]] = []
    results: dict[str, dict[str, Any]] = {}
    try:
        fake, registrar = start(["--serve-registrar", str(work / "fake.port")], work / "fake.port", LOAD_CORE,
                                work / "fake.log")
        procs.append(fake)
        stages = work / "stages.jsonl"
        stages.touch()
        data_dir = work / "svc"
        svc, base = start(["--serve-svc", str(work / "svc.port"), str(data_dir), registrar, str(free_dns_port()),
                           str(stages)], work / "svc.port", SVC_CORE, work / "svc.log")
        procs.append(svc)

        async def measure() -> None:
            run = Run(base, registrar, data_dir / "svc.sqlite3", stages)
            try:
                await run.login()
                results["instant"] = await one_pass(run, "instant", 0.0, args.purchases)
                results["delayed"] = await one_pass(run, "delayed", args.registrar_ms, args.purchases)
            finally:
                await run.close()

        asyncio.run(measure())
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    figures = {"instant": report("the fake registrar answering at once (what svc adds)", results["instant"]),
               "delayed": report(f"every registrar call answered after {args.registrar_ms:g} ms", results["delayed"])}
    log_p95 = {k: pct(r["per_step_log"], 0.95) * 1000 for k, r in results.items()}
    met = all(p95 < GOAL_MS for _, p95 in figures.values()) and all(v < GOAL_MS for v in log_p95.values())
    print(f"\n  goal: overhead under {GOAL_MS:g} ms per step at p95, in both passes, against the peer and against "
          f"the fake's log: instant p95 {figures['instant'][1]:.1f} / {log_p95['instant']:.1f} ms, delayed p95 "
          f"{figures['delayed'][1]:.1f} / {log_p95['delayed']:.1f} ms: {'MET' if met else 'MISSED'}")
    print(json.dumps({"steps": len(STEPS), "registrar_ms": args.registrar_ms, "goal_ms_per_step": GOAL_MS,
                      "met": met,
                      **{f"{k}_overhead_ms_per_step": {"p50": round(p50, 2), "p95": round(p95, 2),
                                                       "p95_vs_log": round(log_p95[k], 2)}
                         for k, (p50, p95) in figures.items()},
                      **{f"{k}_purchase_ms": {"p50": round(pct(r["svc"], 0.5) * 1000, 2),
                                              "p95": round(pct(r["svc"], 0.95) * 1000, 2),
                                              "peer_p50": round(pct(r["peer"], 0.5) * 1000, 2)}
                         for k, r in results.items()}}))


if __name__ == "__main__":
    main()
