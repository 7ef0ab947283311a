"""`hostname.verify`: the ownership check of pending custom hostnames, outside any transaction
(Tx.READ_THEN_WRITE: read the rows, give the store back, look up, write the outcomes).

Two ways in, one kind: the periodic cycle (every SVC_HOSTNAME_VERIFY_SECONDS, run once per slot
across processes; empty payload) checks the pending hostnames checked longest ago, a bounded batch
per run; an add enqueues one for its row ({"host": ...}) so a name in the org's own zone, or one
whose record already exists, turns active within seconds. A failed run is not retried: the next
cycle checks again."""

from __future__ import annotations

from typing import Any

from svc.adapters.resolver.settings import ResolverSettings
from svc.domains.hostnames import service
from svc.domains.hostnames.kinds import HostnameJob
from svc.jobs.registry import JobRegistry, JobRun, TeardownStep
from svc.models import Operation, TeardownPhase
from svc.settings import Config
from svc.uow import UnitOfWork, runs


def register(registry: JobRegistry, config: Config) -> None:
    registry.cycle(HostnameJob.verify, config.settings_of(ResolverSettings).hostname_verify_seconds, verify)
    registry.teardown_step(TeardownStep(TeardownPhase.routing, write=teardown_routing))


async def teardown_routing(uow: UnitOfWork, op: Operation, _: Any) -> None:
    """A project's teardown: the DNS records svc made for its custom hostnames go with the routes
    (an org that is gone held no zones: deleting one needs that)."""
    if op.org_id is not None:
        await service.release_project(uow, op.org_id, op.project_id)


@runs(service.verify_pending)
async def verify(run: JobRun) -> None:
    host = run.payload.get("host")
    await service.verify_pending(run.uow, host if isinstance(host, str) else None)
