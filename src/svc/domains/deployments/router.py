"""HTTP only: deployments (list, streamed upload, rollback).

The upload runs READ_THEN_WRITE (service.deploy says why); the other routes one transaction each."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from starlette.types import Scope

from svc.auth.projects import ProjectMember, ProjectViewer
from svc.deps import Ctx, Uow, api_router
from svc.domains.deployments import service
from svc.domains.deployments.provenance import git_provenance
from svc.domains.deployments.schemas import MAX_VERSION, Deployment, DeploymentList, GitInfo, RollbackRequest
from svc.domains.deployments.settings import DeploymentSettings
from svc.domains.projects import service as projects
from svc.uow import runs

# The API's deploy and the dashboard's upload (svc.web.pages.deployments): the same use case.
_UPLOAD_PATH = re.compile(r"/v1/orgs/[^/]+/projects/[^/]+/deployments/?"
                          r"|/orgs/[^/]+/projects/[^/]+/deployments/upload")

router = api_router(tags=["deployments"])

_BINARY = {"schema": {"type": "string", "format": "binary"}}
_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_UPLOAD_DOC: dict[str, Any] = {
    "requestBody": {"required": True, "description": "The bundle: a gzipped tar with svc.json at its root",
                    "content": {t: _BINARY for t in service.BUNDLE_TYPES}},
}


def is_bundle_upload(scope: Scope) -> bool:
    """A deploy request (the API's or the dashboard's), whose body has bounds of its own (exempt
    from the JSON body cap)."""
    return scope.get("method") == "POST" and _UPLOAD_PATH.fullmatch(scope.get("path", "")) is not None


@router.get("/v1/orgs/{orgSlug}/projects/{projectName}/deployments", response_model=DeploymentList,
            operation_id="listDeployments")
async def list_deployments(
    p: ProjectViewer, uow: Uow,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size")] = 50,
    cursor: Annotated[int | None, Query(ge=1, le=MAX_VERSION, description="A nextCursor: versions below it")] = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_VERSION, description="The same as cursor (its earlier name)")]
    = None,
) -> DeploymentList:
    views, following = await projects.list_deployments(uow, p.project, limit=limit, before=cursor or before)
    return DeploymentList(deployments=views, next_cursor=following)


@router.post("/v1/orgs/{orgSlug}/projects/{projectName}/deployments", status_code=201, response_model=Deployment,
             operation_id="createDeployment", openapi_extra=_UPLOAD_DOC,
             responses={413: {"description": "Over a bundle bound (bundle_too_large)", **_ERROR},
                        415: {"description": "Not a gzipped bundle (unsupported_media_type)", **_ERROR},
                        503: {"description": "The artifact store is not available", **_ERROR}})
@runs(service.deploy)
async def create_deployment(request: Request, p: ProjectMember, uow: Uow, ctx: Ctx,
                            git: Annotated[GitInfo, Depends(git_provenance)]) -> Deployment:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    bound = ctx.settings_of(DeploymentSettings).max_bundle_bytes
    service.check_upload(media, request.headers.get("content-length"), bound)
    return await service.deploy(uow, p.access, p.project, service.upload_chunks(request.stream()), git)


@router.post("/v1/orgs/{orgSlug}/projects/{projectName}/rollback", response_model=Deployment,
             operation_id="rollbackProject")
async def rollback(body: RollbackRequest, p: ProjectMember, uow: Uow) -> Deployment:
    return await service.rollback(uow, p.access, p.project.name, body.version)
