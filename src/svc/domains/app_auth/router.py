"""HTTP only: a project's end-user auth, the control side (spec "End-user auth of a project")."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Response

from svc.auth.projects import ProjectAdmin, ProjectMember, ProjectViewer
from svc.deps import Uow, api_router
from svc.domains.app_auth import schemas, service
from svc.uow import runs

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_NODE: dict[int | str, dict[str, Any]] = {
    503: {"description": "The projects' databases are off or unreachable (no_node_admin, no_home_node)",
          "content": _ERROR}}
router = api_router(tags=["auth"])

_A = "/v1/orgs/{orgSlug}/projects/{projectName}/auth"
# PUT's document names the three providers (any other name: 400 invalid_provider, the spec's code,
# from the service); DELETE takes any name, as one that is no provider is missing: 204.
ProviderPath = Annotated[str, Path(max_length=40, json_schema_extra={"enum": list(service.PROVIDERS)},
                                   description="github, google or microsoft")]
AnyProviderPath = Annotated[str, Path(max_length=40, description="github, google or microsoft (another name: 204)")]


@router.get(_A, response_model=schemas.AuthStatus, operation_id="getAuth",
            summary="Whether the project's end users can sign in, its providers (client ids), hosts and settings")
async def get_auth(p: ProjectViewer, uow: Uow) -> schemas.AuthStatus:
    return await service.status(uow, p.project)


@router.post(_A, response_model=schemas.AuthStatus, operation_id="grantAuth",
             responses={409: {"description": "The project has no database (database_required)", "content": _ERROR},
                        **_NODE},
             summary="Serve sign-in on the project's hosts (/__svc/auth/*), its users in its database; idempotent")
@runs(service.grant)
async def grant_auth(p: ProjectMember, uow: Uow) -> schemas.AuthStatus:
    return await service.grant(uow, p.access, p.project)


@router.patch(_A, response_model=schemas.AuthStatus, operation_id="updateAuthSettings",
              responses={404: {"description": "No such project (not_found), or not granted auth (not_granted)",
                               "content": _ERROR}},
              summary="Change the sign-in's settings: only the fields sent")
@runs(service.update_settings)
async def update_auth(p: ProjectMember, uow: Uow, body: schemas.AuthSettingsPatch) -> schemas.AuthStatus:
    return await service.update_settings(uow, p.access, p.project, body)


@router.delete(_A, status_code=204, operation_id="revokeAuth",
               summary="Stop the sign-in (/__svc/auth/* goes to the worker); the end users are kept; idempotent")
@runs(service.revoke)
async def revoke_auth(p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return Response(status_code=204)


@router.put(_A + "/providers/{provider}", response_model=schemas.AuthStatus, operation_id="setAuthProvider",
            responses={400: {"description": "Not github, google or microsoft, or an empty client id or secret "
                                            "(invalid_provider)", "content": _ERROR},
                       404: {"description": "No such project, or not granted auth (not_granted)", "content": _ERROR}},
            summary="Set or rotate the project's OAuth app at a provider (the secret is sealed, never returned)")
@runs(service.set_provider)
async def set_provider(p: ProjectAdmin, uow: Uow, provider: ProviderPath,
                       body: schemas.AuthProviderPut) -> schemas.AuthStatus:
    return await service.set_provider(uow, p.access, p.project, provider, body)


@router.delete(_A + "/providers/{provider}", status_code=204, operation_id="removeAuthProvider",
               responses=_NODE,
               summary="Remove a provider: its identities go, the end users stay; idempotent")
@runs(service.remove_provider)
async def remove_provider(p: ProjectAdmin, uow: Uow, provider: AnyProviderPath) -> Response:
    await service.remove_provider(uow, p.access, p.project, provider)
    return Response(status_code=204)
