"""Who is calling: resolved from the Bearer token (a session token or a personal access token)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import Select, bindparam, select

from svc.auth.cache import AuthCache, detached_copy
from svc.auth.caller import Principal, Resolved
from svc.deps import READ_METHODS, request_session
from svc.errors import SessionRequired, Unauthorized
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.kit.tokens import PAT_PREFIX, pat_checksum_ok, token_hash
from svc.models import AccessToken, Membership, Org, User, UserSession


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


# Built once: every request runs one of these, and building a statement costs more than running it.
# Only the credential's id and validity are read; the user is the one ORM object a request needs.
AnySelect = Select[*tuple[Any, ...]]

_SESSION_BY_HASH: AnySelect = (
    select(UserSession.id, UserSession.expires_at, User).join(User, User.id == UserSession.user_id)
    .where(UserSession.token_hash == bindparam("digest")))
_PAT_BY_HASH: AnySelect = (
    select(AccessToken.id, AccessToken.expires_at, User, AccessToken.revoked_at)
    .join(User, User.id == AccessToken.user_id).where(AccessToken.token_hash == bindparam("digest")))


def _with_org(stmt: AnySelect) -> AnySelect:
    """The same lookup plus the org named in the path and the caller's role in it, in one query
    (outer joins: a missing org or membership comes back as NULLs, told apart from a bad token)."""
    return (stmt.add_columns(Org, Membership.role)
            .outerjoin(Org, Org.slug == bindparam("slug"))
            .outerjoin(Membership, (Membership.org_id == Org.id) & (Membership.user_id == User.id)))


_SESSION_WITH_ORG = _with_org(_SESSION_BY_HASH)
_PAT_WITH_ORG = _with_org(_PAT_BY_HASH)


def read_cache(request: Request) -> AuthCache | None:
    """The credential cache, for a read request; None for a write (it resolves from the store,
    with objects of its own session, and sees the state it is about to change)."""
    if request.method not in READ_METHODS:
        return None
    cache: AuthCache | None = getattr(request.app.state, "auth_cache", None)
    return cache if cache is not None and cache.enabled else None


async def resolve(session: StoreSession, token: str, org_slug: str | None = None, *,
                  cache: AuthCache | None = None) -> Resolved | None:
    """Bearer token -> principal (None when invalid, expired or revoked), optionally with the
    caller's membership of one org, in a single query, or none when `cache` has the answer."""
    digest = token_hash(token)
    generation = 0
    if cache is not None:
        cached = cache.lookup(digest, org_slug)
        if cached is not None:
            return cached
        generation = cache.generation  # before the read: a clear during it voids the result
    resolved, expires_at = await _resolve(session, token, digest, org_slug)
    if cache is not None and resolved is not None:
        principal = resolved.principal
        copy = Resolved(Principal(user=detached_copy(principal.user), kind=principal.kind,
                                  credential_id=principal.credential_id),
                        None if resolved.org is None else detached_copy(resolved.org), resolved.role)
        cache.store(generation, digest, org_slug, copy, expires_at)
    return resolved


async def _resolve(session: StoreSession, token: str, digest: str,
                   org_slug: str | None) -> tuple[Resolved | None, datetime | None]:
    """From the store; with the credential's expiry."""
    now = utcnow()
    params = {"digest": digest}
    is_pat = token.startswith(PAT_PREFIX)
    if is_pat:
        if not pat_checksum_ok(token):
            return None, None
        stmt = _PAT_BY_HASH if org_slug is None else _PAT_WITH_ORG
    else:
        stmt = _SESSION_BY_HASH if org_slug is None else _SESSION_WITH_ORG
    if org_slug is not None:
        params["slug"] = org_slug
    row = (await session.execute(stmt, params)).first()
    if row is None:
        return None, None
    credential_id, expires_at, user = row[0], row[1], row[2]
    if expires_at is not None and expires_at <= now:
        return None, None
    if is_pat and row[3] is not None:  # revoked
        return None, None
    principal = Principal(user=user, kind="pat" if is_pat else "session", credential_id=credential_id)
    if org_slug is None:
        return Resolved(principal), expires_at
    org, role = row[-2], row[-1]
    return Resolved(principal, org if role is not None else None, role), expires_at


async def resolve_principal(session: StoreSession, token: str, *, cache: AuthCache | None = None) -> Principal | None:
    resolved = await resolve(session, token, cache=cache)
    return resolved.principal if resolved else None


async def current_principal(request: Request) -> Principal:
    token = bearer_token(request)
    if token is None:
        raise Unauthorized()
    principal = await resolve_principal(request_session(request), token, cache=read_cache(request))
    if principal is None:
        raise Unauthorized("The token is invalid, expired or revoked")
    return principal


async def session_principal(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
    if principal.kind != "session":
        raise SessionRequired()
    return principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]
SessionOnlyPrincipal = Annotated[Principal, Depends(session_principal)]
