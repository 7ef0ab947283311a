"""Inbound mail: messages a second accepted and stored by svc's SMTP server, against a bare aiosmtpd
sink that writes the same files, same run.

    .venv/bin/python bench/mail.py [--seconds 5] [--rounds 3] [--concurrency 8] [--size 4096]

svc: its app started in this process as `svc serve` starts it (the SMTP server in svc's process,
on SQLite in a fresh data directory), a project granted email, SVC_DNS_RESOLVER pointing at a
private PowerDNS (svc's managed pdns_server, the tests' fixture) that serves the sender's SPF
record. Each message is checked for SPF (pass), gets its Received and Authentication-Results
headers, its raw copy written to the blob store (files under the data directory: a temporary file,
linked, fsynced, renamed) and its log row and hand-off job committed, before the 250. The job
worker is off: the hand-off to a project's worker (email.to_worker) is another part's, and this
measures the receive path.

The peer: aiosmtpd on an asyncio server in the same process, whose DATA handler writes the message
to the same blob store the same way (FileBlobStore.put_file from a temporary file) and answers 250.
No recipient check, no SPF, no store.

The load generator runs in a process of its own (pinned to core 1, the servers to core 0 when the
machine has two): `--concurrency` SMTP connections, each sending messages one after another (MAIL,
RCPT, DATA) for `--seconds`, every message unique (its Message-ID), counting the 250s. The two
targets alternate over `--rounds`; the median round counts. Goal: svc >= 0.5x the sink."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

# Run as `.venv/bin/python bench/mail.py`: the tests' helpers are imported from the repository.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiosmtpd.smtp import SMTP, Envelope, Session
from harness import machine
from sqlalchemy import func, select
from tests.support.api import running_svc
from tests.support.config import configured
from tests.support.pdns import running_pdns
from tests.support.ports import free_port

from svc.adapters.blobs.files import FileBlobStore
from svc.adapters.nameserver.port import RRsetData
from svc.models import MailLogEntry
from svc.settings import Settings

GOAL = 0.5
SENDER = "bench@spf.bench.test"
ZONE = "bench.test."


def _message(size: int) -> bytes:
    body = ("The quick brown fox jumps over the lazy dog. " * (size // 45 + 1))[:size]
    lines = "\r\n".join(body[i:i + 76] for i in range(0, len(body), 76))
    return (f"From: {SENDER}\r\nTo: {{rcpt}}\r\nSubject: bench {{n}}\r\nMessage-ID: <{{n}}@bench.test>\r\n"
            f"Content-Type: text/plain\r\n\r\n{lines}\r\n").encode()


# --- the load generator (its own process) ---

async def _reply(reader: asyncio.StreamReader) -> int:
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionError("closed")
        if line[3:4] != b"-":
            return int(line[:3])


async def _connection(port: int, rcpt: str, template: bytes, deadline: float, tag: str) -> tuple[int, int]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ok = refused = n = 0
    try:
        await _reply(reader)
        writer.write(b"EHLO bench.client\r\n")
        await _reply(reader)
        while time.monotonic() < deadline:
            n += 1
            writer.write(f"MAIL FROM:<{SENDER}>\r\n".encode())
            if await _reply(reader) != 250:
                refused += 1
                continue
            writer.write(f"RCPT TO:<{rcpt}>\r\n".encode())
            if await _reply(reader) != 250:
                refused += 1
                writer.write(b"RSET\r\n")
                await _reply(reader)
                continue
            writer.write(b"DATA\r\n")
            await _reply(reader)
            writer.write(template.replace(b"{n}", f"{tag}-{n}-{time.time_ns()}".encode())
                         .replace(b"{rcpt}", rcpt.encode()) + b".\r\n")
            if await _reply(reader) == 250:
                ok += 1
            else:
                refused += 1
        writer.write(b"QUIT\r\n")
        await _reply(reader)
    finally:
        writer.close()
    return ok, refused


async def _generate(port: int, rcpt: str, seconds: float, concurrency: int, size: int) -> None:
    template = _message(size)
    deadline = time.monotonic() + seconds
    t0 = time.perf_counter()
    results = await asyncio.gather(*(_connection(port, rcpt, template, deadline, f"c{i}") for i in range(concurrency)))
    elapsed = time.perf_counter() - t0
    print(json.dumps({"ok": sum(r[0] for r in results), "refused": sum(r[1] for r in results), "seconds": elapsed}))


def load(port: int, rcpt: str, seconds: float, concurrency: int, size: int) -> dict[str, float]:
    """One round against the server on `port`, from a process of its own."""
    cmd = [sys.executable, __file__, "--generate", str(port), rcpt, str(seconds), str(concurrency), str(size)]
    if (os.cpu_count() or 1) >= 2:
        cmd = ["taskset", "-c", "1", *cmd]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out))


# --- the two servers (this process) ---

@asynccontextmanager
async def sink(root: Path) -> AsyncIterator[int]:
    """The peer: aiosmtpd writing each message to a file blob store, as svc's blob store writes it."""
    blobs = FileBlobStore(root / "blobs")
    tmp = root / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    counter = 0

    class Handler:
        async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
            nonlocal counter
            counter += 1
            content = envelope.original_content or b""
            path = await asyncio.to_thread(_temp, tmp, content)
            try:
                await blobs.put_file(f"mail/sink/{counter}.eml", path)
            finally:
                await asyncio.to_thread(path.unlink)
            return "250 OK"

    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(Handler(), hostname="sink.bench.test", loop=loop,
                                                   data_size_limit=10 * 1024**2), "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


def _cpu() -> float:
    """CPU seconds of this process, every thread's (user and system)."""
    t = os.times()
    return t.user + t.system


def _temp(tmp: Path, content: bytes) -> Path:
    fd, name = tempfile.mkstemp(dir=tmp, suffix=".eml")
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    return Path(name)


@asynccontextmanager
async def svc_smtp(root: Path, dns: tuple[str, int]) -> AsyncIterator[tuple[int, str]]:
    """svc (SQLite) with its SMTP server, a project granted email; (port, a recipient)."""
    settings = Settings(data_dir=root / "data", enable_dev_auth=True, public_url="http://svc.test")
    config = configured(settings, mail_domain="mail.bench.test", smtp_port=free_port(),
                        dns_resolver=f"{dns[0]}:{dns[1]}", smtp_rate_per_ip=10**9, smtp_rate_per_address=10**9)
    async with running_svc(config, run_workers=False) as svc:
        # As `svc serve` does once started (freeze_startup, svc/running.py): what start-up made is
        # frozen, so the collector's full passes do not walk it at every few hundred messages.
        gc.collect()
        gc.freeze()
        alice = await svc.login("alice")
        assert (await alice.client.post("/v1/orgs", json={"slug": "bench"})).status_code == 201
        assert (await alice.client.post("/v1/orgs/bench/projects", json={"name": "site"})).status_code == 201
        r = await alice.client.post("/v1/orgs/bench/projects/site/email")
        assert r.status_code == 200, r.text
        smtp = svc.ctx.adapters.smtp
        assert smtp is not None and smtp.port
        yield smtp.port, f"hello@{r.json()['address']}"
        # What was stored: every message checked (SPF pass from the PowerDNS), one row each.
        async with svc.ctx.db.transaction(write=False) as s:
            found = (await s.execute(select(MailLogEntry.spf, func.count()).group_by(MailLogEntry.spf))).all()
        print("svc stored: " + ", ".join(f"{n} with spf={spf}" for spf, n in found))


async def main(args: argparse.Namespace) -> None:
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {0})
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f}")
    print(f"{args.rounds} rounds of {args.seconds:g} s, {args.concurrency} connections, {args.size}-byte bodies")
    with tempfile.TemporaryDirectory(prefix="svc-bench-mail-") as where:
        root = Path(where)
        async with running_pdns(root / "pdns") as pdns:
            await pdns.nameserver.ensure_zone(ZONE, nameservers=pdns.names.nameservers.split(","))
            await pdns.nameserver.apply(ZONE, replace=[
                RRsetData("spf." + ZONE, "TXT", 60, ('"v=spf1 ip4:127.0.0.1 -all"',))], delete=[])
            async with svc_smtp(root / "svc", (pdns.host, pdns.port)) as (svc_port, rcpt), sink(root / "sink") as bare:
                rates: dict[str, list[float]] = {"svc": [], "sink": []}
                cpu: dict[str, list[float]] = {"svc": [], "sink": []}
                for port in (svc_port, bare):  # warm-up
                    await asyncio.to_thread(load, port, rcpt, 1.0, args.concurrency, args.size)
                for i in range(args.rounds):
                    for label, port in (("svc", svc_port), ("sink", bare)):
                        before = _cpu()
                        got = await asyncio.to_thread(load, port, rcpt, args.seconds, args.concurrency, args.size)
                        if got["refused"]:
                            sys.exit(f"{label}: {got['refused']} messages refused")
                        rate = got["ok"] / got["seconds"]
                        rates[label].append(rate)
                        cpu[label].append((_cpu() - before) / got["ok"] * 1000)
                        print(f"round {i + 1}: {label:4} {rate:8.1f} messages/s "
                              f"({int(got['ok'])} in {got['seconds']:.1f} s), {cpu[label][-1]:.2f} ms CPU a message")
    svc_rate, sink_rate = statistics.median(rates["svc"]), statistics.median(rates["sink"])
    ratio = svc_rate / sink_rate
    svc_cpu, sink_cpu = statistics.median(cpu["svc"]), statistics.median(cpu["sink"])
    print(f"median: svc {svc_rate:.1f} messages/s, bare aiosmtpd sink {sink_rate:.1f} messages/s: "
          f"{ratio:.2f}x (goal >= {GOAL}x: {'met' if ratio >= GOAL else 'NOT met'})")
    print(f"CPU of the server process (its threads too) a message: svc {svc_cpu:.2f} ms, sink {sink_cpu:.2f} ms: "
          f"the sink's is {sink_cpu / svc_cpu:.2f}x svc's (steadier on a shared machine)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--generate":
        port, rcpt, seconds, concurrency, size = sys.argv[2:7]
        asyncio.run(_generate(int(port), rcpt, float(seconds), int(concurrency), int(size)))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--size", type=int, default=4096)
    asyncio.run(main(parser.parse_args()))
