"""HTTP only: a project's hostnames (the default one and custom ones), and the edge's page for a
pending hostname."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Response

from svc.auth.projects import ProjectMember, ProjectViewer
from svc.deps import Uow, api_router
from svc.domains.hostnames import schemas, service
from svc.uow import runs

router = api_router(tags=["hostnames"])

_BASE = "/v1/orgs/{orgSlug}/projects/{projectName}/hostnames"
# Any other value is a host the project does not have (404), so the format is stated for clients only.
HostPath = Annotated[str, Path(alias="host", max_length=300, json_schema_extra={"format": "idn-hostname"},
                               description="The host name, such as www.example.com (any case, unicode or "
                                           "punycode); the project's default hostname cannot be deleted (400)")]


@router.get(_BASE, response_model=schemas.HostnameList, operation_id="listHostnames")
async def list_hostnames(p: ProjectViewer, uow: Uow) -> schemas.HostnameList:
    return await service.list_hostnames(uow, p.project)


@router.post(_BASE, response_model=schemas.Hostname, operation_id="addHostname")
@runs(service.add_hostname)
async def add_hostname(body: schemas.HostnameAdd, p: ProjectMember, uow: Uow) -> schemas.Hostname:
    return await service.add_hostname(uow, p.access, p.project, body.name)


@router.delete(_BASE + "/{host}", status_code=204, response_class=Response, operation_id="deleteHostname")
async def delete_hostname(host: HostPath, p: ProjectMember, uow: Uow) -> Response:
    await service.delete_hostname(uow, p.access, p.project, host)
    return Response(status_code=204)


@router.post(_BASE + "/{host}/verify", response_model=schemas.Hostname, operation_id="verifyHostname")
@runs(service.verify_hostname)
async def verify_hostname(host: HostPath, p: ProjectMember, uow: Uow) -> schemas.Hostname:
    return await service.verify_hostname(uow, p.project, host)
