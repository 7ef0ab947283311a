"""HTTP only: the secrets of a project. Values go in, never out."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Response

from svc.auth.projects import ProjectMember
from svc.deps import Ctx, Uow, api_router
from svc.domains.secrets import schemas, service
from svc.models import Secret

router = api_router(tags=["secrets"])

SecretNamePath = Annotated[str, Path(alias="secretName", max_length=64, pattern=service.NAME_PATTERN,
                                     description="A-Z first, then A-Z, 0-9 and _; DB, ASSETS and SVC_* are reserved")]

_BASE = "/v1/orgs/{orgSlug}/projects/{projectName}/secrets"


def _meta(row: Secret) -> schemas.SecretMeta:
    return schemas.SecretMeta(name=row.name, version=row.version, updated_at=row.updated_at)


@router.get(_BASE, response_model=schemas.SecretList, operation_id="listSecrets")
async def list_secrets(p: ProjectMember, uow: Uow) -> schemas.SecretList:
    return schemas.SecretList(secrets=[_meta(r) for r in await service.list_secrets(uow, p.project)])


@router.put(_BASE + "/{secretName}", response_model=schemas.SecretMeta, operation_id="setSecret")
async def set_secret(name: SecretNamePath, body: schemas.SecretPut, p: ProjectMember, uow: Uow,
                     ctx: Ctx) -> schemas.SecretMeta:
    return _meta(await service.set_secret(uow, ctx, p.access, p.project, name, body.value))


@router.delete(_BASE + "/{secretName}", status_code=204, response_class=Response, operation_id="deleteSecret")
async def delete_secret(name: SecretNamePath, p: ProjectMember, uow: Uow) -> Response:
    await service.delete_secret(uow, p.access, p.project, name)
    return Response(status_code=204)
