"""A job worker in an OS process of its own, for tests/jobs/test_multiprocess.py.

    python -m tests.jobs.worker_process DB_URL --marker p1 --ready FILE [--lease SECONDS]

Runs svc's Worker on the given PostgreSQL store with two test job kinds; writes its worker name
to FILE once the loop runs; stops on SIGTERM.
  test.record  writes an AuditEvent (action test.job, target = payload id, data.marker) in the
               job's own transaction.
  test.slow    on attempt 1 first records `test.started` in a transaction of its own, then sleeps
               (to be killed mid-job); on any attempt it then writes the test.job row like test.record.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import tempfile
from pathlib import Path

from svc.adapters.mail.eml import EmlDirectorySender
from svc.context import Adapters, AppContext
from svc.db import open_database
from svc.domains.audit.service import record
from svc.jobs.registry import JobRegistry, JobRun
from svc.jobs.worker import Worker, worker_name
from svc.settings import Settings
from svc.uow import unit_of_work
from tests.jobs.helpers import TestKind

STARTED = "test.started"


def build_registry(marker: str) -> JobRegistry:
    registry = JobRegistry()

    async def write(run: JobRun) -> None:
        await record(run.session, "test.job", actor=None, org=None, target=str(run.payload["id"]),
                     data={"marker": marker, "attempt": run.attempt})

    async def handle_record(run: JobRun) -> None:
        await asyncio.sleep(float(run.payload.get("sleep", 0)))
        await write(run)

    async def handle_slow(run: JobRun) -> None:
        if run.attempt == 1:
            async with unit_of_work(run.ctx) as uow:
                await record(uow.session, STARTED, actor=None, org=None, target=str(run.payload["id"]),
                             data={"marker": marker})
            await asyncio.sleep(float(run.payload.get("sleep", 120)))
        await write(run)

    registry.handler(TestKind.record, handle_record)
    registry.handler(TestKind.slow, handle_slow)
    return registry


async def main(db_url: str, marker: str, ready: Path, lease: float, poll: float) -> None:
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(database_url=db_url, data_dir=Path(data), job_poll_seconds=poll,
                            job_lease_seconds=lease)
        db = open_database(settings)
        ctx = AppContext(settings=settings, db=db, adapters=Adapters(mail=EmlDirectorySender(Path(data) / "mail")),
                         worker_name=f"{marker}:{worker_name()}")
        worker = Worker(ctx, build_registry(marker))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        task = asyncio.create_task(worker.run(stop))
        tmp = ready.with_suffix(".tmp")
        tmp.write_text(worker.name)
        tmp.replace(ready)
        try:
            await task
        finally:
            await db.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("db_url")
    parser.add_argument("--marker", required=True)
    parser.add_argument("--ready", required=True, type=Path)
    parser.add_argument("--lease", type=float, default=60.0)
    parser.add_argument("--poll", type=float, default=0.05)
    args = parser.parse_args()
    asyncio.run(main(args.db_url, args.marker, args.ready, args.lease, args.poll))
