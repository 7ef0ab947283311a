"""`hostname.verify`: the ownership check of pending custom hostnames, outside any transaction
(Tx.READ_THEN_WRITE: read the rows, give the store back, look up, write the outcomes).

Two ways in, one kind: the periodic cycle (every SVC_HOSTNAME_VERIFY_SECONDS, run once per slot
across processes; empty payload) checks the pending hostnames checked longest ago, a bounded batch
per run; an add enqueues one for its row ({"host": ...}) so a name in the org's own zone, or one
whose record already exists, turns active within seconds. A failed run is not retried: the next
cycle checks again."""

from __future__ import annotations

from svc.domains.hostnames import service
from svc.jobs.registry import JobRegistry, JobRun
from svc.models import JobKind
from svc.settings import Settings
from svc.uow import runs


def register(registry: JobRegistry, settings: Settings) -> None:
    registry.cycle(JobKind.hostname_verify, settings.hostname_verify_seconds, verify)


@runs(service.verify_pending)
async def verify(run: JobRun) -> None:
    host = run.payload.get("host")
    await service.verify_pending(run.uow, host if isinstance(host, str) else None)
