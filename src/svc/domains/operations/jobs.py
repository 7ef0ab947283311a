"""Project teardown: one `project.teardown` job per phase. Each run does its phase and, in the same
transaction, records the next phase and enqueues the job that runs it, so a crash resumes at the
phase it was in; every phase is safe to run twice.

What a phase does is declared by the areas that own it, as they register their jobs
(svc.jobs.registry.TeardownStep; this area names none of them). Phases (svc.models.TeardownPhase):
- routing: the project was unrouted when the operation started; the edge converges once more
  (projects), and the DNS records svc made for its custom hostnames go (hostnames);
- files: unpacked sites and stored bundles no other project uses (deployments), and the git
  repositories' disk copies (repos): outside the store, nothing held;
- grants: one-time access codes of the project's hostnames, before the hostnames go (access);
- database: the project's database drained, its final generation kept (listed after), dropped
  (databases);
- metadata: the project row; its deployments, hostnames and secrets go with it (foreign keys
  ON DELETE CASCADE), and the edge converges (projects);
- done, with terminal code ok.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from svc.domains.operations import queries
from svc.domains.operations.kinds import OperationJob
from svc.jobs.registry import JobRegistry, JobRun, TeardownStep
from svc.kit.clock import utcnow
from svc.models import TeardownPhase, TerminalCode
from svc.settings import Config
from svc.uow import Tx, use_case

_ORDER = list(TeardownPhase)


def register(registry: JobRegistry, config: Config) -> None:
    # The areas' steps: the list fills as the areas after this one register theirs.
    steps = registry.teardown

    @use_case(Tx.READ_THEN_WRITE)  # files and blobs are removed with nothing of the store held
    async def teardown(run: JobRun) -> None:
        await teardown_step(run, steps)

    registry.handler(OperationJob.project_teardown, teardown)


async def teardown_step(run: JobRun, steps: Sequence[TeardownStep]) -> None:
    op_id = str(run.payload["operation_id"])
    op = await queries.by_id(run.session, op_id)
    if op is None or op.terminal_code is not None:
        return
    phase = TeardownPhase(op.phase)
    if phase is TeardownPhase.done:
        return
    mine = [step for step in steps if step.phase is phase]
    found: list[Any] = []
    for step in mine:
        found.append(await step.outside(run.uow, op) if step.outside is not None else None)
    session = await run.uow.begin_write()
    op = await queries.by_id(session, op_id, lock=True)
    if op is None or op.phase != phase.value:
        return  # another run of this job moved it on meanwhile
    for step, outside in zip(mine, found, strict=True):
        if step.write is not None:
            await step.write(run.uow, op, outside)
    following = _ORDER[_ORDER.index(phase) + 1]
    op.phase = following.value
    if following is TeardownPhase.done:
        op.terminal_code = TerminalCode.ok
        op.finished_at = utcnow()
        op.running_key = None
    else:
        run.uow.enqueue(OperationJob.project_teardown, {"operation_id": op_id})
