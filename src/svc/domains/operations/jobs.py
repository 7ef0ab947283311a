"""Project teardown: one `project.teardown` job per phase. Each run does its phase and, in the same
transaction, records the next phase and enqueues the job that runs it, so a crash resumes at the
phase it was in; every phase is safe to run twice.

Phases (svc.models.states.TeardownPhase):
- routing: the project was unrouted when the operation started; the edge converges once more;
- files: unpacked sites and stored bundles no other project uses, and the git repositories' disk
  copies (outside the store, nothing held);
- grants: one-time access codes of the project's hostnames (before the hostnames go);
- database: the project's database drained, its final generation kept (listed after), dropped;
- metadata: the project row; its deployments, hostnames and secrets go with it (foreign keys
  ON DELETE CASCADE), and the edge converges;
- done, with terminal code ok.
"""

from __future__ import annotations

from svc.domains.access import service as access
from svc.domains.databases import service as databases
from svc.domains.deployments import service as deployments
from svc.domains.hostnames import service as hostnames
from svc.domains.operations import queries
from svc.domains.projects import service as projects
from svc.domains.repos import service as repos
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.models import JobKind, TeardownPhase, TerminalCode
from svc.settings import Settings
from svc.uow import Tx, use_case

_ORDER = list(TeardownPhase)


def register(registry: JobRegistry, settings: Settings) -> None:
    registry.handler(JobKind.project_teardown, teardown_step)


@use_case(Tx.READ_THEN_WRITE)  # files and blobs are removed with nothing of the store held
async def teardown_step(run: JobRun) -> None:
    op_id = str(run.payload["operation_id"])
    op = await queries.by_id(run.session, op_id)
    if op is None or op.terminal_code is not None:
        return
    phase, project_id = TeardownPhase(op.phase), op.project_id
    if phase is TeardownPhase.done:
        return
    taken = None
    if phase is TeardownPhase.files:
        digests = await deployments.unshared_digests(run.uow, project_id)
        repo_ids = await repos.project_repo_ids(run.uow, project_id)
        await run.uow.close_reads()
        await deployments.remove_artifacts(run.ctx, project_id, digests)
        await repos.remove_disk_copies(run.ctx, repo_ids)
    elif phase is TeardownPhase.database:
        taken = await databases.teardown_take(run.uow, project_id)
    session = await run.uow.begin_write()
    op = await queries.by_id(session, op_id, lock=True)
    if op is None or op.phase != phase.value:
        return  # another run of this job moved it on meanwhile
    if phase is TeardownPhase.routing:
        # The DNS records svc made for its custom hostnames go with the routes (an org that is
        # gone held no zones: deleting one needs that).
        if op.org_id is not None:
            await hostnames.release_project(run.uow, op.org_id, project_id)
        await projects.edge_changed(run.uow, project_id)
    elif phase is TeardownPhase.grants:
        await access.forget_project_grants(session, project_id)
    elif phase is TeardownPhase.database:
        await databases.teardown_record(run.uow, project_id, taken)
    elif phase is TeardownPhase.metadata:
        await projects.delete_project_row(session, project_id)
        await projects.edge_changed(run.uow, project_id)
    following = _ORDER[_ORDER.index(phase) + 1]
    op.phase = following.value
    if following is TeardownPhase.done:
        op.terminal_code = TerminalCode.ok
        op.finished_at = utcnow()
        op.running_key = None
    else:
        run.uow.enqueue(JobKind.project_teardown, {"operation_id": op_id})
