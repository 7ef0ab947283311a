"""Workers: what the runtime asks of svc (a live deployment's code and env by key; the log lines it
sends). A bundle's worker is checked before it goes live by the deployments area (worker_code.py).
Services flush, never commit.

The runtime holds no state: the edge names each request's worker by key
(`<deployment id>.<bindings generation>`, projects' routing table), and the runtime's dispatcher
asks GET /v1/runtime/workers/{key} the first time it sees one. A secret set or deleted bumps the
project's bindings generation (projects.service.bindings_changed): a new key, so the next request
loads the new env while requests in flight finish on the old one."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from svc.adapters.edge.port import TrafficBatch
from svc.adapters.workers.port import EntrypointBinding, LiveWorker, WorkerCode
from svc.context import AppContext
from svc.domains.deployments import service as deployments
from svc.domains.projects import service as projects
from svc.domains.workers import errors, queries, schemas
from svc.domains.workers.settings import WorkerSettings
from svc.kit.clock import utcnow
from svc.models import LogLine, Project
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

log = logging.getLogger("svc.workers")

LEVELS = ("debug", "info", "log", "warn", "error")


def check_runtime_token(ctx: AppContext, given: str | None) -> None:
    runtime = ctx.adapters.runtime
    if runtime is None or given is None or not hmac.compare_digest(given.encode(), runtime.token.encode()):
        raise errors.RuntimeForbidden()


@use_case(Tx.READ)
async def runtime_worker(uow: UnitOfWork, key: str) -> schemas.RuntimeWorker:
    """A deployment's worker as the runtime loads it, with the project's env as it is now."""
    worker = await _worker_of(uow, key)
    if worker is None:
        raise errors.WorkerNotFound(details={"key": key})
    return worker


async def _worker_of(uow: UnitOfWork, key: str, project_id: str | None = None) -> schemas.RuntimeWorker | None:
    """The worker of a key (of that project, when named) with the project's env as it is now."""
    ctx = uow.ctx
    deployment_id = key.rpartition(".")[0]
    row = await deployments.deployment_by_id(uow.session, deployment_id)
    if row is None or row.worker is None or (project_id is not None and row.project_id != project_id):
        return None
    project = await projects.project_by_id(uow.session, row.project_id)
    if project is None:
        return None
    if project_id is not None and f"{project.live_deployment_id}.{project.bindings_generation}" != key:
        return None  # moved on meanwhile: the loading process serves it until the next turn
    env: dict[str, Any] = {}
    for source in ctx.bindings:  # each area's, as its manifest declares (secrets: env.<NAME>, env.db)
        env |= await source(uow.session, ctx, project)
    entrypoints = {name: {"entrypoint": value.entrypoint, "props": dict(value.props)}
                   for name, value in env.items() if isinstance(value, EntrypointBinding)}
    env = {name: value for name, value in env.items() if name not in entrypoints}
    await uow.close_reads()
    site, code = await deployments.worker_of(ctx, row)
    has_assets = await asyncio.to_thread((site / "assets").is_dir)
    return schemas.RuntimeWorker(
        project=project.id, main_module=code.main_module, modules=dict(code.modules),
        compatibility_date=code.compatibility_date, env=env, entrypoints=entrypoints,
        assets=f"{site.name}/assets" if has_assets else None)


async def live_key(uow: UnitOfWork, project_id: str) -> str | None:
    """The key of the project's live worker (None: no live deployment with a worker, or the
    project is not active): what the runtime loads it by (the email area hands it mail)."""
    return (await queries.live_worker_keys(uow.session, project_id)).get(project_id)


class SteadySource:
    """What the runtime's steady processes read of the store (adapters/workers/port.py LiveWorkers;
    svc.app hands it in): the live workers' keys, then their code and env."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    async def keys(self) -> dict[str, str]:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await queries.live_worker_keys(uow.session)

    async def workers(self, keys: Mapping[str, str]) -> list[LiveWorker]:
        found = []
        for project_id, key in keys.items():
            async with unit_of_work(self.ctx, Tx.READ) as uow:
                worker = await _worker_of(uow, key, project_id)
            if worker is None:
                continue
            env: dict[str, object] = {**worker.env, **{
                name: EntrypointBinding(entrypoint=e["entrypoint"], props=e["props"])
                for name, e in worker.entrypoints.items()}}
            found.append(LiveWorker(project_id=project_id, key=key, env=env, assets=worker.assets,
                                    code=WorkerCode(main_module=worker.main_module, modules=worker.modules,
                                                    compatibility_date=worker.compatibility_date)))
        return found


@use_case(Tx.WRITE)
async def record_runtime_logs(uow: UnitOfWork, project_id: str, lines: schemas.RuntimeLogLines) -> int:
    """The runtime's lines of a project's worker (console.*, uncaught exceptions) into its logs."""
    session = uow.session
    if await projects.project_by_id(session, project_id) is None:
        return 0  # deleted meanwhile: its lines go with it
    for line in lines.lines:
        session.add(LogLine(project_id=project_id, at=_at(line.at), source="worker",
                            level=line.level if line.level in LEVELS else "log", message=line.message,
                            stack=line.stack, request_id=line.request_id))
    await session.flush()
    return len(lines.lines)


def _at(millis: float) -> datetime:
    try:
        return datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return utcnow()


# Longer than any retention setting allows (SVC_LOG_RETENTION_HOURS).
LONGEST_SINCE = timedelta(days=3650)


async def project_logs(uow: UnitOfWork, project: Project, *, after: int | None, since: timedelta | None,
                       limit: int, request: str | None = None) -> schemas.LogPage:
    """A page of a project's log lines: the last `limit` (within `since`), or those after a cursor;
    of one request only when `request` names it (its id, or the end of it that people are shown)."""
    session = uow.session
    # A window longer than anything is kept means every kept line (and 999999d would not fit a date).
    start = utcnow() - min(since, LONGEST_SINCE) if since is not None else None
    rows = await queries.lines(session, project.id, after=after, since=start, limit=limit, request=request)
    cursor = rows[-1].seq if rows else (after if after is not None else await queries.last_seq(session, project.id))
    return schemas.LogPage(lines=[schemas.LogLineView.model_validate(row) for row in rows], next_cursor=str(cursor))


@use_case(Tx.WRITE)
async def expire_logs(uow: UnitOfWork) -> int:
    """Drop the log lines older than SVC_LOG_RETENTION_HOURS and the traffic counts older than
    SVC_TRAFFIC_RETENTION_DAYS (the logs.expire cycle)."""
    own = uow.ctx.settings_of(WorkerSettings)
    dropped = await queries.delete_older_than(uow.session, utcnow() - timedelta(hours=own.log_retention_hours))
    return dropped + await queries.delete_traffic_before(uow.session,
                                                         utcnow() - timedelta(days=own.traffic_retention_days))


class TrafficRecorder:
    """The edge's TrafficSink (svc.app hands it to the edge): a batch of requests becomes counts per
    project and minute (the traffic chart) and raw `edge` lines in the project's logs."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    async def record(self, batch: TrafficBatch) -> None:
        async with unit_of_work(self.ctx, Tx.WRITE) as uow:
            await record_traffic(uow, batch)


async def record_traffic(uow: UnitOfWork, batch: TrafficBatch) -> None:
    session = uow.session
    # (The counts and the lines of a request may come in different batches.)
    alive = await queries.existing_projects(session, {project_id for project_id, _ in batch.counts}
                                            | {r.project_id for r in batch.samples})
    for r in batch.samples:
        if r.project_id in alive:
            session.add(LogLine(project_id=r.project_id, at=r.at, source="edge", level=f"{r.status // 100}xx",
                                message=f"{r.method} {r.path} {r.status} {r.bytes_sent} B {r.duration_ms:g} ms",
                                request_id=r.request_id or None))
    for (project_id, minute), row in sorted(batch.counts.items()):
        if project_id in alive:  # (else deleted meanwhile)
            await queries.add_traffic(session, project_id, minute,
                                      {"s2xx": row[0], "s3xx": row[1], "s4xx": row[2], "s5xx": row[3]}, row[4])
    await session.flush()


async def traffic(uow: UnitOfWork, project: Project, *, hours: int = 24) -> schemas.Traffic:
    """A project's requests and bytes over the last `hours`, in equal spans (oldest first): 96
    when they divide the hours into whole minutes (24 h: 15 minutes each), else 60."""
    buckets = 96 if hours * 60 % 96 == 0 else 60
    now = utcnow().replace(second=0, microsecond=0)
    start = now - timedelta(hours=hours) + timedelta(minutes=1)
    span = hours * 60 // buckets
    rows = await queries.traffic_since(uow.session, project.id, start)
    sums = [[0, 0, 0, 0, 0] for _ in range(buckets)]
    for row in rows:
        index = min(int((row.minute - start).total_seconds() // 60) // span, buckets - 1)
        for i, value in enumerate((row.s2xx, row.s3xx, row.s4xx, row.s5xx, row.bytes_sent)):
            sums[index][i] += value
    return schemas.Traffic(
        hours=hours, minutes_per_bucket=span,
        buckets=[schemas.TrafficBucket(start=start + timedelta(minutes=i * span), s2xx=s[0], s3xx=s[1], s4xx=s[2],
                                       s5xx=s[3], bytes_sent=s[4]) for i, s in enumerate(sums)],
        requests=sum(s[0] + s[1] + s[2] + s[3] for s in sums), bytes_sent=sum(s[4] for s in sums))
