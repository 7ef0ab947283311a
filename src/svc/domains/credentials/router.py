"""HTTP only: /v1/me/tokens and /v1/me/ssh-keys. Creating either needs a session token. A token's
limits (one project, read-only) are enforced where every request resolves its caller (svc.auth)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Response

from svc.auth.principal import CurrentPrincipal, SessionOnlyPrincipal
from svc.deps import Uow, api_router
from svc.domains.credentials import schemas, service
from svc.models import SSHKey

router = api_router(tags=["credentials"])

TokenIdPath = Annotated[str, Path(alias="tokenId", max_length=64)]
KeyIdPath = Annotated[str, Path(alias="keyId", max_length=64)]


def _token(token: service.Token) -> schemas.AccessToken:
    row = token.row
    return schemas.AccessToken(id=row.id, name=row.name, hint=row.hint + "…", created_at=row.created_at,
                               expires_at=row.expires_at, revoked_at=row.revoked_at, last_used_at=row.last_used_at,
                               project=token.project, read_only=row.read_only)


def _key(row: SSHKey) -> schemas.SSHKey:
    return schemas.SSHKey(id=row.id, name=row.name, type=row.key_type, bits=row.bits, fingerprint=row.fingerprint,
                          public_key=row.public_key, created_at=row.created_at)


@router.get("/v1/me/tokens", response_model=schemas.AccessTokenList, operation_id="listAccessTokens")
async def list_tokens(principal: CurrentPrincipal, uow: Uow) -> schemas.AccessTokenList:
    return schemas.AccessTokenList(tokens=[_token(r) for r in await service.list_tokens(uow, principal.user)])


@router.post("/v1/me/tokens", status_code=201, response_model=schemas.AccessTokenCreated,
             operation_id="createAccessToken")
async def create_token(body: schemas.AccessTokenCreate, principal: SessionOnlyPrincipal,
                       uow: Uow) -> schemas.AccessTokenCreated:
    new = await service.create_token(uow, principal.user, name=body.name, expires_in_days=body.expires_in_days,
                                     project=body.project, read_only=body.read_only)
    return schemas.AccessTokenCreated(**_token(new).model_dump(), token=new.plaintext)


@router.delete("/v1/me/tokens/{tokenId}", status_code=204, response_class=Response,
               operation_id="revokeAccessToken")
async def revoke_token(token_id: TokenIdPath, principal: CurrentPrincipal, uow: Uow) -> Response:
    await service.revoke_token(uow, principal.user, token_id)
    return Response(status_code=204)


@router.get("/v1/me/ssh-keys", response_model=schemas.SSHKeyList, operation_id="listSshKeys")
async def list_keys(principal: CurrentPrincipal, uow: Uow) -> schemas.SSHKeyList:
    return schemas.SSHKeyList(ssh_keys=[_key(r) for r in await service.list_keys(uow, principal.user)])


@router.post("/v1/me/ssh-keys", status_code=201, response_model=schemas.SSHKey, operation_id="addSshKey")
async def add_key(body: schemas.SSHKeyCreate, principal: SessionOnlyPrincipal, uow: Uow) -> schemas.SSHKey:
    return _key(await service.add_key(uow, principal.user, name=body.name, public_key=body.public_key))


@router.delete("/v1/me/ssh-keys/{keyId}", status_code=204, response_class=Response, operation_id="deleteSshKey")
async def delete_key(key_id: KeyIdPath, principal: CurrentPrincipal, uow: Uow) -> Response:
    await service.delete_key(uow, principal.user, key_id)
    return Response(status_code=204)
