"""Who is calling: resolved from the Bearer token (a session token or a personal access token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Request
from sqlalchemy import bindparam, select

from svc.deps import Session
from svc.errors import SessionRequired, Unauthorized
from svc.kit.clock import utcnow
from svc.kit.tokens import PAT_PREFIX, pat_checksum_ok, token_hash
from svc.models import AccessToken, User, UserSession


@dataclass(frozen=True)
class Principal:
    user: User
    kind: Literal["session", "pat"]
    credential_id: str


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


# Built once: every request runs one of these, and building a statement costs more than running it.
# Only the credential's id and validity are read; the user is the one ORM object a request needs.
_SESSION_BY_HASH = (
    select(UserSession.id, UserSession.expires_at, User).join(User, User.id == UserSession.user_id)
    .where(UserSession.token_hash == bindparam("digest")))
_PAT_BY_HASH = (
    select(AccessToken.id, AccessToken.revoked_at, AccessToken.expires_at, User)
    .join(User, User.id == AccessToken.user_id).where(AccessToken.token_hash == bindparam("digest")))


async def resolve_principal(session: Session, token: str) -> Principal | None:
    now = utcnow()
    digest = token_hash(token)
    if token.startswith(PAT_PREFIX):
        if not pat_checksum_ok(token):
            return None
        row = (await session.execute(_PAT_BY_HASH, {"digest": digest})).first()
        if row is None:
            return None
        pat_id, revoked_at, expires_at, user = row
        if revoked_at is not None or (expires_at is not None and expires_at <= now):
            return None
        return Principal(user=user, kind="pat", credential_id=pat_id)
    srow = (await session.execute(_SESSION_BY_HASH, {"digest": digest})).first()
    if srow is None:
        return None
    session_id, session_expires_at, user = srow
    if session_expires_at <= now:
        return None
    return Principal(user=user, kind="session", credential_id=session_id)


async def current_principal(request: Request, session: Session) -> Principal:
    token = bearer_token(request)
    if token is None:
        raise Unauthorized()
    principal = await resolve_principal(session, token)
    if principal is None:
        raise Unauthorized("The token is invalid, expired or revoked")
    return principal


async def session_principal(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
    if principal.kind != "session":
        raise SessionRequired()
    return principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]
SessionOnlyPrincipal = Annotated[Principal, Depends(session_principal)]
