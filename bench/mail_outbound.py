"""Outbound mail: messages/s through svc's send path (POST .../email/send: checks, the hourly cap's
count, the message built and DKIM-signed with RSA 2048, stored in the blob store, the row and its
job written; then the email.send job: the stored bytes read and handed to the relay over SMTP)
to an aiosmtpd sink, against the relay alone: plain smtplib sends of the same signed bytes to the
same sink, one SMTP session per message as svc's relay adapter opens, same run.

    .venv/bin/python bench/mail_outbound.py [--messages 200] [--rounds 3] [--concurrency 8]

svc runs in this process (the app on an in-process ASGI transport, its own job worker in the
background, a fresh SQLite store in a temporary data dir, the org on the pro plan so the hourly
cap, 2,000, is not reached; the log is emptied between rounds). A svc round is timed from the first
request to the sink holding every message; the requests alone are timed too (accepted/s). The two
targets alternate over the rounds; the median round counts. The sink (tests/support/smtp.py) runs
in a thread of this process for both. No goal is set by the issue; the figure says what signing,
storing and the job queue cost over the SMTP exchange itself."""

from __future__ import annotations

import argparse
import asyncio
import smtplib
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import delete, update

# tests.support (the sink, the in-process svc) lives beside bench/ in the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.smtp import SmtpSink
from tests.support.team import make_team

from svc.models import MailLogEntry, Org
from svc.settings import Settings

MAIL_DOMAIN = "mail.bench.test"
E = "/v1/orgs/acme/projects/site/email"


async def svc_round(svc: Svc, client: object, sink: SmtpSink, count: int, concurrency: int) -> tuple[float, float]:
    """(messages/s end to end, requests accepted/s)."""
    async with svc.ctx.db.transaction() as s:
        await s.execute(delete(MailLogEntry))
    before = len(sink.messages)
    queue = asyncio.Queue[int]()
    for i in range(count):
        queue.put_nowait(i)

    async def sender() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            r = await client.post(E + "/send", json={  # type: ignore[attr-defined]
                "to": [f"user{i}@example.com"], "subject": f"Bench {i}",
                "text": "Hello from the bench.\n" * 20, "html": "<p>Hello from the bench.</p>" * 20})
            if r.status_code != 202:
                raise SystemExit(f"send answered {r.status_code}: {r.text}")

    start = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    accepted = time.perf_counter() - start
    await sink.wait_for(before + count, timeout=600)
    done = time.perf_counter() - start
    return count / done, count / accepted


def peer_round(sink: SmtpSink, raws: list[tuple[str, list[str], bytes]], count: int) -> float:
    """smtplib alone: one session per message, the same bytes, the same sink."""
    start = time.perf_counter()
    for i in range(count):
        sender, rcpts, raw = raws[i % len(raws)]
        with smtplib.SMTP("127.0.0.1", sink.port, timeout=30) as client:
            client.ehlo()
            client.sendmail(sender, rcpts, raw)
    return count / (time.perf_counter() - start)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, SmtpSink() as sink:
        settings = Settings(data_dir=Path(tmp) / "data", enable_dev_auth=True, public_url="http://svc.test",
                            job_poll_seconds=0.05)
        config = configured(settings, mail_domain=MAIL_DOMAIN, smtp_relay_url=sink.url)
        async with running_svc(config) as svc:
            team = await make_team(svc, project="site")
            async with svc.ctx.db.transaction() as s:
                await s.execute(update(Org).where(Org.slug == "acme").values(plan="pro"))
            assert (await team.bob.client.post(E)).status_code == 200
            client = team.bob.client
            await svc_round(svc, client, sink, 10, args.concurrency)  # warm-up: the DKIM key is made here
            # The peer sends the very bytes svc stored and sent (its raw download), to the same envelope.
            raws: list[tuple[str, list[str], bytes]] = []
            for entry in (await client.get(E + "/log", params={"limit": 10})).json()["entries"]:
                raw = (await client.get(f"{E}/log/{entry['id']}/raw")).content
                raws.append((entry["from"], entry["to"].split(", "), raw))
            peer_round(sink, raws, 10)
            svc_figures: list[tuple[float, float]] = []
            peer_figures: list[float] = []
            for n in range(args.rounds):
                svc_figures.append(await svc_round(svc, client, sink, args.messages, args.concurrency))
                peer_figures.append(await asyncio.to_thread(peer_round, sink, raws, args.messages))
                print(f"round {n + 1}: svc {svc_figures[-1][0]:7.1f} msg/s (requests accepted "
                      f"{svc_figures[-1][1]:7.1f}/s)   smtplib alone {peer_figures[-1]:7.1f} msg/s", flush=True)
    svc_rate = statistics.median(f[0] for f in svc_figures)
    accepted = statistics.median(f[1] for f in svc_figures)
    peer = statistics.median(peer_figures)
    print(f"median: svc {svc_rate:.1f} msg/s end to end (POST accepted {accepted:.1f}/s), relay alone "
          f"{peer:.1f} msg/s: ratio {svc_rate / peer:.2f}x")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
