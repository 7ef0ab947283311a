"""Restore and delete of a project's database: operations with persisted phases (the spec's
"Database operations" table), one per project at a time, resumable after a crash.

One `database.operation` job per phase: it does the phase's work on the node with nothing of the
store held, then (in its write transaction, the operation's row locked) records the next phase and
enqueues the job that runs it. Every phase is safe to run twice, so a crash at any point resumes
where it was:

- draining: the project's role may no longer connect, open sessions are ended (env.db's too);
- sealing: a generation of the database as it is now (restore: `pre_restore`, what the restore
  replaces; delete: `final`, kept and listed after the database is gone, never pruned);
- committing: restore: the database made fresh and filled from the chosen generation, after its
  archive's sha256 was checked (a mismatch fails the restore with the database reopened as it
  was); delete: the database, its role and its token users dropped, the grant removed;
- reactivation (restore only): the role may connect again; the epoch rises by one;
- done, with terminal code ok.

Abort (delete only, before committing) marks the operation aborted; the next job reopens the
database. A restore is never abortable.

Back up now (svc's extension of the generations, POST generations) is an operation too, so that
one runs at a time per project (409 operation_in_progress) and a client follows it as the others:

- dumping: a generation of the database as it is now (kind `manual`), listed and counted in the
  epoch's seq as the scheduled ones; the database stays open;
- verifying: its scratch restore, as every generation's (`verified`, `restoreSeconds`): the
  operation ends ok once it is proven, failed (its `error` saying why) when it is not.
Not abortable."""

from __future__ import annotations

import logging
from typing import Any

from svc.adapters.database.port import DatabaseNode, DatabaseNodeError
from svc.auth.roles import OrgAccess
from svc.domains.audit.service import record
from svc.domains.databases import errors, generations, queries, schemas, service
from svc.domains.databases.kinds import DatabaseJob
from svc.domains.databases.node import node_of
from svc.domains.notifications import service as notifications
from svc.domains.operations import service as operations
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.jobs.registry import JobRun
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import (
    DatabaseGeneration,
    DatabaseOpPhase,
    GenerationKind,
    Operation,
    OperationKind,
    Project,
    ProjectDatabase,
    TerminalCode,
)
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.databases")

Phase = DatabaseOpPhase
RESTORE = [Phase.draining, Phase.sealing, Phase.committing, Phase.reactivation, Phase.done]
DELETE = [Phase.draining, Phase.sealing, Phase.committing, Phase.done]
BACKUP = [Phase.dumping, Phase.verifying, Phase.done]
ORDERS = {OperationKind.restore: RESTORE, OperationKind.delete: DELETE, OperationKind.backup: BACKUP}
ABORTABLE = frozenset({Phase.draining, Phase.sealing})


async def _start(uow: UnitOfWork, access: OrgAccess, project: Project, kind: OperationKind,
                 data: dict[str, Any]) -> Operation:
    session = uow.session
    running = await operations.running_for(uow, project.id)
    if running is not None:
        raise errors.OperationInProgress(details={"operationId": running.id, "kind": running.kind})
    op = Operation(id=new_id("op"), org_id=access.org.id, project_id=project.id, project_name=project.name,
                   kind=kind.value, phase=ORDERS[kind][0].value, created_at=utcnow(), running_key=project.id,
                   data=data)
    session.add(op)
    await record(session, f"database.{kind.value}", actor=access.principal.user, org=access.org,
                 target=project.name, data={"project": project.name, **{k: v for k, v in data.items()
                                                                       if k in ("epoch", "seq")}})
    await session.flush()
    uow.enqueue(DatabaseJob.operation, {"operation_id": op.id})
    return op


@use_case(Tx.WRITE)
async def start_restore(uow: UnitOfWork, access: OrgAccess, project: Project,
                        body: schemas.RestoreRequest) -> Operation:
    node_of(uow.ctx)
    session = uow.session
    await queries.lock_project(session, project.id)
    if await queries.grant(session, project.id) is None:
        raise errors.DatabaseNotFound()
    chosen = await queries.generation_at(session, project.id, body.epoch, body.seq,
                                         [k.value for k in generations.LISTED])
    if chosen is None:
        raise errors.GenerationNotFound(details={"epoch": body.epoch, "seq": body.seq})
    return await _start(uow, access, project, OperationKind.restore,
                        {"epoch": body.epoch, "seq": body.seq, "generation": chosen.id})


@use_case(Tx.WRITE)
async def start_delete(uow: UnitOfWork, access: OrgAccess, project: Project, body: schemas.DeleteRequest) -> Operation:
    if body.confirm != project.name:
        raise errors.ConfirmMismatch(details={"expected": "the project's name"})
    session = uow.session
    await queries.lock_project(session, project.id)
    if await queries.grant(session, project.id) is None:
        raise errors.DatabaseNotFound()
    return await _start(uow, access, project, OperationKind.delete, {})


@use_case(Tx.WRITE)
async def start_backup(uow: UnitOfWork, access: OrgAccess, project: Project) -> Operation:
    """Back up now: a generation taken on request and proven restorable, as an operation (one at a
    time per project: a second while one runs is 409 operation_in_progress)."""
    node_of(uow.ctx)
    session = uow.session
    await queries.lock_project(session, project.id)
    if await queries.grant(session, project.id) is None:
        raise errors.DatabaseNotFound()
    return await _start(uow, access, project, OperationKind.backup, {})


async def get(uow: UnitOfWork, project: Project, op_id: str) -> Operation:
    """An operation of this project (another project's, or none: 404 as if absent)."""
    op = await uow.session.get(Operation, op_id)
    if op is None or op.project_id != project.id or op.kind not in ORDERS:
        raise errors.OperationNotFound()
    return op


@use_case(Tx.WRITE)
async def abort(uow: UnitOfWork, access: OrgAccess, project: Project, op_id: str) -> Operation:
    await get(uow, project, op_id)  # reads first (404), then aborts with the row locked
    op = await uow.session.get(Operation, op_id, with_for_update=True)
    assert op is not None
    if op.kind != OperationKind.delete or op.terminal_code is not None or Phase(op.phase) not in ABORTABLE:
        raise errors.NotAbortable(details={"kind": op.kind, "phase": op.phase})
    op.terminal_code = TerminalCode.aborted
    op.finished_at = utcnow()
    op.running_key = None
    await record(uow.session, "database.abort", actor=access.principal.user, org=access.org, target=project.name,
                 data={"project": project.name, "operation": op.id})
    uow.enqueue(DatabaseJob.operation, {"operation_id": op.id})  # reopens the database
    return op


@use_case(Tx.READ_THEN_WRITE)  # the node's work runs with nothing of the store held
async def step(run: JobRun) -> None:
    op_id = str(run.payload["operation_id"])
    node = run.ctx.adapters.database
    op = await run.session.get(Operation, op_id)
    if op is None or node is None:
        return
    data = dict(op.data or {})
    if op.terminal_code == TerminalCode.aborted:
        if not data.get("reopened"):
            await run.uow.close_reads()
            await node.reopen(op.project_id)
            session = await run.uow.begin_write()
            op = await session.get(Operation, op_id, with_for_update=True)
            if op is not None:
                op.data = {**(op.data or {}), "reopened": True}
        return
    if op.terminal_code is not None:
        return
    phase, project_id, kind = Phase(op.phase), op.project_id, OperationKind(op.kind)
    # What the phase needs, read before the store is let go (the objects stay readable).
    grant = await queries.grant(run.session, project_id)
    chosen = await queries.generation(run.session, str(data["generation"])) if data.get("generation") else None
    sealed = await queries.generation(run.session, str(data["sealed"])) if data.get("sealed") else None
    if kind is OperationKind.backup:
        await _backup_step(run, op, phase, node, grant, sealed)
        return
    await run.uow.close_reads()

    taken: generations.Taken | None = None
    failure: str | None = None
    if phase is Phase.draining:
        await node.drain(project_id)
    elif phase is Phase.sealing and grant is not None:
        taken = await generations.take(run.ctx, node, project_id, grant.epoch)
    elif phase is Phase.committing and kind is OperationKind.restore:
        failure = await _replace(run, node, project_id, chosen, sealed)
    elif phase is Phase.committing:
        await node.drop(project_id)
    elif phase is Phase.reactivation:
        await node.reopen(project_id)

    session = await run.uow.begin_write()
    await queries.lock_project(session, project_id)
    op = await session.get(Operation, op_id, with_for_update=True)
    if op is None or op.phase != phase.value or op.terminal_code is not None:
        if taken is not None:
            blobs = run.ctx.blobs
            run.uow.after_commit(lambda: blobs.delete(taken.blob_key))
        if op is not None and op.terminal_code == TerminalCode.aborted:
            run.uow.enqueue(DatabaseJob.operation, {"operation_id": op_id})  # reopen after this phase's work
        return
    grant = await queries.grant(session, project_id)
    if failure is not None:
        await _finish(run.uow, op, TerminalCode.failed)
        await _notify(run.uow, op, "restore.failed", f"The restore of {op.project_name}'s database to generation "
                      f"{data.get('epoch')}.{data.get('seq')} failed: {failure}. The database is open again, as it "
                      "was before the restore.")
        return
    if taken is not None and grant is not None:
        why = GenerationKind.pre_restore if kind is OperationKind.restore else GenerationKind.final
        seq = await queries.next_seq(session, project_id, grant.epoch, [k.value for k in generations.LISTED])
        session.add(generations.row_of(taken, project_id, grant.epoch, seq, why))
        op.data = {**data, "sealed": taken.id}
        run.uow.enqueue(DatabaseJob.verify, {"generation_id": taken.id})
    if phase is Phase.committing and kind is OperationKind.delete:
        await queries.delete_tokens(session, await queries.token_users(session, project_id))
        if grant is not None:
            await session.delete(grant)
        await session.flush()
        await projects.bindings_changed(run.uow, project_id)
    if phase is Phase.reactivation and grant is not None:
        grant.epoch += 1
        grant.change_marker = None  # the new epoch's first generation comes with the next check
        await projects.bindings_changed(run.uow, project_id)
    order = ORDERS[kind]
    following = order[order.index(phase) + 1]
    op.phase = following.value
    if following is Phase.done:
        await _finish(run.uow, op, TerminalCode.ok)
        if kind is OperationKind.restore:
            await _notify(run.uow, op, "restore.done", f"{op.project_name}'s database was restored to generation "
                          f"{data.get('epoch')}.{data.get('seq')}; writes made after it are gone. What it replaced "
                          "is kept as a pre-restore generation.")
        else:
            await _notify(run.uow, op, "database.deleted", f"{op.project_name}'s database was deleted. Its final "
                          "generation is kept and listed.")
    else:
        run.uow.enqueue(DatabaseJob.operation, {"operation_id": op_id})


async def _backup_step(run: JobRun, op: Operation, phase: Phase, node: DatabaseNode,
                       grant: ProjectDatabase | None, taken_row: DatabaseGeneration | None) -> None:
    """A phase of back up now: dumping (the generation taken and listed), then verifying (its
    scratch restore). `taken_row`: the generation dumping took (op.data's "sealed")."""
    op_id, project_id = op.id, op.project_id
    await run.uow.close_reads()
    taken: generations.Taken | None = None
    result: generations.Verification | None = None
    failure: str | None = None
    if phase is Phase.dumping and grant is not None:
        try:
            taken = await generations.take(run.ctx, node, project_id, grant.epoch)
        except Exception as exc:  # the node or the blob store: either way, tried again, then said
            if not run.last_attempt:
                raise  # (nothing was written)
            # Ended in words rather than left running: it would hold the project's one operation.
            failure = f"the dump failed: {exc}"
    elif phase is Phase.dumping:
        failure = "the project has no database any more"
    elif phase is Phase.verifying and taken_row is not None:
        result = await generations.verify(run.ctx, node, taken_row)
    else:
        failure = "the generation taken is gone"

    session = await run.uow.begin_write()
    await queries.lock_project(session, project_id)
    current = await session.get(Operation, op_id, with_for_update=True)
    if current is None or current.phase != phase.value or current.terminal_code is not None:
        if taken is not None:  # another run of this phase recorded its own
            blobs = run.ctx.blobs
            run.uow.after_commit(lambda: blobs.delete(taken.blob_key))
        return
    if failure is not None:
        current.error = failure[:1000]
        await _finish(run.uow, current, TerminalCode.failed)
        return
    if taken is not None:
        grant = await queries.grant(session, project_id)
        if grant is None:
            blobs = run.ctx.blobs
            run.uow.after_commit(lambda: blobs.delete(taken.blob_key))
            current.error = "the project has no database any more"
            await _finish(run.uow, current, TerminalCode.failed)
            return
        seq = await queries.next_seq(session, project_id, grant.epoch, [k.value for k in generations.LISTED])
        session.add(generations.row_of(taken, project_id, grant.epoch, seq, GenerationKind.manual))
        # What the hourly check compares with: it takes no second generation of the same data.
        grant.change_marker = taken.marker
        grant.last_checked_at = taken.taken_at
        current.data = {**(current.data or {}), "sealed": taken.id, "epoch": grant.epoch, "seq": seq}
        current.phase = Phase.verifying.value
        run.uow.enqueue(DatabaseJob.operation, {"operation_id": op_id})
        return
    assert result is not None and taken_row is not None
    proven = await service.record_verification(run.uow, taken_row.id, result)
    if not proven:
        current.error = (result.error or "the restore check failed")[:1000]
    await _finish(run.uow, current, TerminalCode.ok if proven else TerminalCode.failed)


async def _replace(run: JobRun, node: DatabaseNode, project_id: str, chosen: DatabaseGeneration | None,
                   sealed: DatabaseGeneration | None) -> str | None:
    """Committing of a restore; the reason in words when it cannot be done (then the database is
    reopened with what it held: untouched on a bad archive; from the pre-restore generation when
    the restore itself failed for good)."""
    if chosen is None:
        await node.reopen(project_id)
        return "the chosen generation is gone"
    try:
        async with generations.fetched(run.ctx, chosen) as path:
            await node.replace(project_id, path)
        return None
    except generations.Tampered as exc:
        await node.reopen(project_id)  # replace() was not called: the database is as it was
        return str(exc)
    except DatabaseNodeError as exc:
        if not run.last_attempt:
            raise  # tried again (the phase is idempotent)
        reason = str(exc)
    if sealed is not None:
        try:
            async with generations.fetched(run.ctx, sealed) as path:
                await node.replace(project_id, path)
        except (generations.Tampered, DatabaseNodeError) as exc:
            log.error("database of %s: putting back its pre-restore generation failed: %s", project_id, exc)
    await node.reopen(project_id)
    return reason


async def _finish(uow: UnitOfWork, op: Operation, code: TerminalCode) -> None:
    op.phase = Phase.done.value
    op.terminal_code = code
    op.finished_at = utcnow()
    op.running_key = None


async def _notify(uow: UnitOfWork, op: Operation, kind: str, message: str) -> None:
    org = await orgs.org_by_id(uow, op.org_id) if op.org_id else None
    if org is not None:
        await notifications.mailed(uow, org, kind=kind, project=op.project_name, settings=uow.ctx.settings,
                                   subject=f"{op.project_name}'s database", message=message)
