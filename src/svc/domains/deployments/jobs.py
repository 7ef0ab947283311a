"""`artifact.collect`: remove the bundle (and any unpacked site) a failed deploy left, once its grace
period passed, unless a committed deployment uses the digest by then. Reads, then removes with
nothing of the store held (Tx.READ_THEN_WRITE); safe to run twice."""

from __future__ import annotations

from svc.domains.deployments import artifacts, queries, service
from svc.domains.deployments.kinds import DeploymentJob
from svc.jobs.registry import JobRegistry, JobRun, TeardownStep
from svc.models import Operation, TeardownPhase
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case


def register(registry: JobRegistry, config: Config) -> None:
    registry.handler(DeploymentJob.artifact_collect, collect)
    registry.teardown_step(TeardownStep(TeardownPhase.files, outside=teardown_files))


async def teardown_files(uow: UnitOfWork, op: Operation) -> None:
    """A project's teardown: its unpacked sites and stored bundles that no other project uses."""
    digests = await service.unshared_digests(uow, op.project_id)
    await uow.close_reads()
    await service.remove_artifacts(uow.ctx, op.project_id, digests)


@use_case(Tx.READ_THEN_WRITE)
async def collect(run: JobRun) -> None:
    digest = str(run.payload["digest"])
    if await queries.digest_used(run.session, digest):
        return
    await run.uow.close_reads()
    await artifacts.remove_artifact(run.ctx, digest)
