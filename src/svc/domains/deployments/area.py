"""The deployments area: immutable bundles uploaded to a project, the live one, rollback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from svc.context import AppContext
from svc.domains.deployments import jobs, kinds, pages, router, service
from svc.domains.deployments.settings import DeploymentSettings
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place


@contextlib.asynccontextmanager
async def _lifespan(ctx: AppContext) -> AsyncIterator[None]:
    # What a killed process left half-done (staging dirs, temporary uploads): never visible, removed here.
    await asyncio.to_thread(service.sweep_partials, ctx)
    yield


AREA = Area(
    name="deployments",
    settings=DeploymentSettings,
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Deployments", "/deployments", order=10),),
    hints={
        "bundle_too_large": "Leave out what the site does not need (node_modules, source maps), or raise "
                            "SVC_MAX_BUNDLE_BYTES on the server.",
        "bad_bundle": "Upload a .tar.gz with svc.json at its root (as the svc deploy command makes it), or drop the "
                      "site's folder.",
        "unsupported_media_type": "Upload a .tar.gz file (a gzipped tar with svc.json at its root) or a folder.",
        "bad_worker": "Fix the worker named in the message (svc deploy checks it the same way before it goes "
                      "live); the version that was live keeps serving.",
    },
    jobs=jobs.register, job_kinds=kinds.DeploymentJob,
    uploads=router.is_bundle_upload,
    lifespan=_lifespan,
)
