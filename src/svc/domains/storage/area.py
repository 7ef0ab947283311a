"""The storage area: a project's object storage under its own prefix, within its plan's quota
(docs/storage.md)."""

from __future__ import annotations

from pathlib import Path

from starlette.types import Scope

from svc.domains.storage import jobs, kinds, pages, router, runtime, runtime_router, service
from svc.domains.storage.settings import StorageSettings
from svc.manifest import Area, NavLink, ProjectResource
from svc.web.dashboard import Place


def _uploads(scope: Scope) -> bool:
    """An object's upload, the API's, a worker's put() or the dashboard's: each bounds its body
    itself (the quota), not the JSON cap."""
    return router.is_object_upload(scope) or runtime_router.is_upload(scope) or pages.is_upload(scope)


AREA = Area(
    name="storage",
    routers=(router.router, runtime_router.router),
    bindings=runtime.worker_env,
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Storage", "/storage", order=37),),
    resource=ProjectResource(name="storage", binding="env.storage",
                             what="objects under the project's own prefix, within its plan's quota",
                             granted=service.has_grant, command="svc storage grant --project {project}",
                             tab="/storage", button="Grant storage", off=service.unavailable),
    uploads=_uploads,
    jobs=jobs.register, job_kinds=kinds.StorageJob,
    settings=StorageSettings,
    hints={"storage_unavailable": "The operator of this svc configures the object store (files under the data "
                                  "directory by default, or S3) and restarts it.",
           "storage_quota_exceeded": "Delete objects the project no longer needs, or move the org to a plan with "
                                     "a larger quota."},
)
