"""The repos area: projects' git repositories, served over HTTPS and SSH (docs/repos.md)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.types import Scope

from svc.context import AppContext
from svc.domains.repos import jobs, kinds, pages, router, transport
from svc.domains.repos.gatekeeper import Gatekeeper
from svc.domains.repos.hostkey import host_key
from svc.domains.repos.settings import RepoSettings
from svc.manifest import Area, NavLink, OrgHolding
from svc.models import Repo, Role
from svc.web.dashboard import Place


@contextlib.asynccontextmanager
async def node_running(ctx: AppContext) -> AsyncIterator[None]:
    """The git node's gate (and SSH server) open while svc serves."""
    node = ctx.adapters.git
    if node is None:
        yield
        return
    key = await host_key(ctx, node) if node.ssh_port else None
    await node.start(Gatekeeper(ctx), ssh_host_key=key)
    try:
        yield
    finally:
        await node.stop()


def _git_upload(scope: Scope) -> bool:
    return transport.is_git_request(str(scope.get("path", "")))


AREA = Area(
    name="repos",
    routers=(router.router, transport.router),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    # Beside Deployments: a push to a repository is how a project is deployed from git.
    nav=(NavLink(Place.project, "Repositories", "/repos", order=12, role=Role.viewer),),
    jobs=jobs.register, job_kinds=kinds.RepoJob,
    holdings=(OrgHolding("repositories", Repo, Repo.name),),
    uploads=_git_upload,
    settings=RepoSettings,
    lifespan=node_running,
    hints={"git_unavailable": "The operator of this svc installs git and leaves SVC_GIT_ENABLED on (docs/repos.md)."},
)
