"""The signed-in person's own credentials: personal access tokens (the token shown once, in the answer
to the form that created it) and SSH public keys. The same service calls as /v1/me/tokens and
/v1/me/ssh-keys; creating either needs a session, which a dashboard viewer always has."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Request, Response

from svc.auth.caller import Principal
from svc.deps import Uow
from svc.domains.credentials import schemas, service
from svc.kit.clock import as_utc, utcnow
from svc.models import AccessToken
from svc.web import render
from svc.web.deps import SignedIn
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

TokenIdPath = Annotated[str, Path(alias="tokenId", max_length=64)]
KeyIdPath = Annotated[str, Path(alias="keyId", max_length=64)]


def _state(row: AccessToken) -> str:
    if row.revoked_at is not None:
        return "revoked"
    if row.expires_at is not None and as_utc(row.expires_at) <= utcnow():
        return "expired"
    return "active"


async def _token_rows(uow: Uow, principal: Principal) -> list[dict[str, Any]]:
    return [{"row": t.row, "project": t.project, "state": _state(t.row)}
            for t in reversed(await service.list_tokens(uow, principal.user))]


def _project_ref(value: str | None) -> dict[str, str] | str | None:
    """The form's "org/project" choice as the API's {"org", "name"}; empty: not limited; anything
    else as typed, for the model to refuse."""
    if value is None:
        return None
    org, slash, name = value.partition("/")
    return {"org": org, "name": name} if slash else value


async def _page(request: Request, uow: Uow, principal: Principal, created: service.NewToken | None) -> Response:
    return await render.render(request, "credentials/tokens.html", title="Access tokens", created=created,
                               tokens=await _token_rows(uow, principal),
                               projects=await service.projects_to_limit_to(uow, principal.user))


def _whole_number(value: str | None) -> int | str | None:
    """A form's digits as the JSON number the API's model takes; anything else as typed, for the model to refuse."""
    if value is None:
        return None
    return int(value) if value.strip().isdigit() and len(value.strip()) <= 6 else value


@router.get("/account/tokens")
async def tokens_page(request: Request, principal: SignedIn, uow: Uow) -> Response:
    return await _page(request, uow, principal, None)


@router.post("/account/tokens")
async def create_token(request: Request, principal: SignedIn, uow: Uow) -> Response:
    form = await fields(request)
    body = parse(schemas.AccessTokenCreate, {"name": form.get("name", ""),
                                             "expiresInDays": _whole_number(form.get("expiresInDays")),
                                             "project": _project_ref(form.get("project")),
                                             # A checkbox is sent when ticked (its value "on"), absent otherwise.
                                             "readOnly": "readOnly" in form})
    new = await service.create_token(uow, principal.user, name=body.name, expires_in_days=body.expires_in_days,
                                     project=body.project, read_only=body.read_only)
    # Shown in this answer only: never in a redirect's notice, a URL or a log.
    if render.is_htmx(request):
        return await render.render_part(request, "credentials/_token_created.html", created=new,
                                        tokens=await _token_rows(uow, principal))
    return await _page(request, uow, principal, new)


@router.post("/account/tokens/{tokenId}/revoke")
async def revoke_token(request: Request, principal: SignedIn, uow: Uow, token_id: TokenIdPath) -> Response:
    await service.revoke_token(uow, principal.user, token_id)
    return render.redirect(request, "/account/tokens", flash="Token revoked: it stops working at once.")


@router.get("/account/ssh-keys")
async def keys_page(request: Request, principal: SignedIn, uow: Uow) -> Response:
    return await render.render(request, "credentials/ssh_keys.html", title="SSH keys",
                               keys=await service.list_keys(uow, principal.user))


@router.post("/account/ssh-keys")
async def add_key(request: Request, principal: SignedIn, uow: Uow) -> Response:
    form = await fields(request)
    body = parse(schemas.SSHKeyCreate, {"name": form.get("name", ""), "publicKey": form.get("publicKey", "")})
    row = await service.add_key(uow, principal.user, name=body.name, public_key=body.public_key)
    return render.redirect(request, "/account/ssh-keys", flash=f"SSH key {row.name} added ({row.fingerprint}).")


@router.post("/account/ssh-keys/{keyId}/delete")
async def delete_key(request: Request, principal: SignedIn, uow: Uow, key_id: KeyIdPath) -> Response:
    await service.delete_key(uow, principal.user, key_id)
    return render.redirect(request, "/account/ssh-keys", flash="SSH key deleted.")
