"""A received message to the project's worker: the `email.to_worker` job ({"mail_id"}), enqueued by
the SMTP server as it stores the message (inbound.py). When the project has a live worker, its
email(message, env, ctx) handler runs on the message (Cloudflare's Email Workers' handler); the
row's outcome becomes `handled`, or `worker_rejected` with the handler's reason in `detail`. No live
worker, or one whose main module exports no email(): the row stays `received`.

The runtime is reached on its control socket, which the edge never proxies to (adapters/workers/
workerd.py deliver_email): a visitor cannot make a worker's email() run, nor hand it a message.
A handler that throws or overruns the wall-time bound fails the job, which is retried with the
jobs' backoff; after the last attempt the row stays `received` with the failure in `detail`."""

from __future__ import annotations

import logging

from svc.adapters.blobs.port import BlobMissing
from svc.adapters.workers.port import InboundEmail, RuntimeUnavailable, WorkerFailed
from svc.domains.email import queries, runtime
from svc.domains.workers import service as workers
from svc.jobs.registry import JobRun
from svc.kit.clock import utcnow
from svc.models import MailDirection, MailLogEntry, MailOutcome
from svc.uow import Tx, use_case

log = logging.getLogger("svc.email")

# Attempts at a message's handoff at most, whatever the job was enqueued with (the jobs' default
# is 8, whose backoff reaches minutes): a worker that keeps throwing is not retried for long.
ATTEMPTS = 4
DETAIL_MAX = 2000


@use_case(Tx.READ_THEN_WRITE)  # the worker runs with nothing of the store held
async def to_worker(run: JobRun) -> None:
    uow, mail_id = run.uow, str(run.payload.get("mail_id", ""))
    row = await uow.session.get(MailLogEntry, mail_id)
    if row is None or row.direction != MailDirection.inbound or row.outcome != MailOutcome.received:
        return  # pruned, or handed over already (a job run twice)
    if await queries.grant(uow.session, row.project_id) is None:
        return  # revoked since it came: mail in and out stopped, the worker is not given it
    runtime_adapter = run.ctx.adapters.runtime
    key = await workers.live_key(uow, row.project_id)
    if key is None or runtime_adapter is None or row.raw_key is None:
        return  # no live worker: the message stays received (in the log, its raw downloadable)
    project_id, raw_key = row.project_id, row.raw_key
    message = dict(mail_id=row.id, sender=row.from_addr, recipients=row.to_addr)
    await uow.close_reads()
    try:
        raw = await runtime.read_raw(run.ctx, raw_key)
    except BlobMissing:
        log.warning("mail %s: its raw message is gone from the blob store; not handed to the worker", mail_id)
        return
    try:
        verdict = await runtime_adapter.deliver_email(project_id, key, InboundEmail(raw=raw, **message))
    except (WorkerFailed, RuntimeUnavailable) as exc:
        if not (run.last_attempt or run.attempt >= ATTEMPTS):
            raise
        tries = f"{run.attempt} attempt{'' if run.attempt == 1 else 's'}"
        await _settle(run, mail_id, None, f"the worker's email() failed ({tries}): {exc}")
        return
    if verdict.outcome == "handled":
        await _settle(run, mail_id, MailOutcome.handled, None)
    elif verdict.outcome == "rejected":
        await _settle(run, mail_id, MailOutcome.worker_rejected, verdict.reason or "")


async def _settle(run: JobRun, mail_id: str, outcome: MailOutcome | None, detail: str | None) -> None:
    session = await run.uow.begin_write()
    row = await session.get(MailLogEntry, mail_id, with_for_update=True)
    if row is None or row.outcome != MailOutcome.received:
        return  # pruned meanwhile
    if outcome is not None:
        row.outcome = outcome
    row.detail = detail[:DETAIL_MAX] if detail is not None else None
    row.updated_at = utcnow()
    await session.flush()
