"""Project teardown, a job run phase by phase. Each phase is recorded when it completes, so a
crash resumes at the phase it was in; every phase is safe to run twice.

Phases: routing (the project was unrouted when the operation started; the edge converges),
files (unpacked sites and stored bundles no other project uses), grants (access codes, found by
the project's hostnames, so before those go; and, as their areas land, resource grants),
hostnames, secrets, metadata (deployments and the project row), then done with terminal code ok."""

from __future__ import annotations

from sqlalchemy import delete, select

from svc.context import AppContext
from svc.domains.deployments.artifacts import referenced_elsewhere, remove_artifact
from svc.domains.projects.routing import bump_edge
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.models import AccessGrant, Deployment, Hostname, Operation, Project, Secret

PHASES = ("routing", "files", "grants", "hostnames", "secrets", "metadata", "done")


def register(registry: JobRegistry) -> None:
    registry.handler("project.teardown", _teardown)


async def _teardown(run: JobRun) -> None:
    op_id = str(run.payload["operation_id"])
    ctx = run.ctx
    while True:
        async with ctx.db.transaction(write=False) as s:
            op = await s.get(Operation, op_id)
            if op is None or op.terminal_code is not None:
                return
            phase, project_id = op.phase, op.project_id
        if phase == "done":
            return
        await _run_phase(ctx, phase, project_id)
        async with ctx.db.transaction() as s:
            op = await s.get(Operation, op_id)
            if op is None:
                return
            following = PHASES[PHASES.index(phase) + 1]
            op.phase = following
            if following == "done":
                op.terminal_code = "ok"
                op.finished_at = utcnow()
                op.running_key = None


async def _run_phase(ctx: AppContext, phase: str, project_id: str) -> None:
    if phase == "routing":
        async with ctx.db.transaction() as s:
            await bump_edge(s)
        if ctx.edge is not None:
            await ctx.edge.converge_now()
    elif phase == "files":
        async with ctx.db.transaction(write=False) as s:
            digests = set((await s.scalars(
                select(Deployment.digest).where(Deployment.project_id == project_id))).all())
            unshared = [d for d in sorted(digests) if not await referenced_elsewhere(s, d, project_id)]
        for digest in unshared:
            await remove_artifact(ctx, digest)
    else:
        async with ctx.db.transaction() as s:
            if phase == "hostnames":
                await s.execute(delete(Hostname).where(Hostname.project_id == project_id))
                await bump_edge(s)
            elif phase == "secrets":
                await s.execute(delete(Secret).where(Secret.project_id == project_id))
            elif phase == "grants":
                hosts = select(Hostname.host).where(Hostname.project_id == project_id)
                await s.execute(delete(AccessGrant).where(AccessGrant.host.in_(hosts)))
            elif phase == "metadata":
                await s.execute(delete(Deployment).where(Deployment.project_id == project_id))
                await s.execute(delete(Project).where(Project.id == project_id))
