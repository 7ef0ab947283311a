"""The repos area: projects' git repositories, served over HTTPS and SSH (docs/repos.md)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.types import Scope

from svc.context import AppContext
from svc.domains.repos import jobs, router, transport
from svc.domains.repos.gatekeeper import Gatekeeper
from svc.domains.repos.hostkey import host_key
from svc.domains.repos.settings import RepoSettings
from svc.manifest import Area, OrgHolding
from svc.models import Repo


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
    templates=Path(__file__).parent / "templates",
    jobs=jobs.register,
    holdings=(OrgHolding("repositories", Repo, Repo.name),),
    uploads=_git_upload,
    settings=RepoSettings,
    lifespan=node_running,
    hints={"git_unavailable": "The operator of this svc installs git and leaves SVC_GIT_ENABLED on (docs/repos.md)."},
)
