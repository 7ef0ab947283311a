"""Who is calling: resolved from the Bearer token (a session token or a personal access token)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import Select, bindparam, select

from svc.auth.cache import AuthCache, detached_copy
from svc.auth.caller import Principal, Resolved
from svc.deps import READ_METHODS, request_session
from svc.errors import SessionRequired, TokenProjectLimited, TokenReadOnly, Unauthorized
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.kit.tokens import PAT_PREFIX, pat_checksum_ok, token_hash
from svc.models import AccessToken, Membership, Org, Project, User, UserSession


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


# Built once: every request runs one of these, and building a statement costs more than running it.
# Only the credential's id, validity and (a PAT's) limits are read; the user is the one ORM object a
# request needs. A PAT limited to a project carries that project's org (a project never moves).
AnySelect = Select[*tuple[Any, ...]]

_SESSION_BY_HASH: AnySelect = (
    select(UserSession.id, UserSession.expires_at, User).join(User, User.id == UserSession.user_id)
    .where(UserSession.token_hash == bindparam("digest")))
_PAT_BY_HASH: AnySelect = (
    select(AccessToken.id, AccessToken.expires_at, User, AccessToken.revoked_at, AccessToken.project_id,
           Project.org_id, AccessToken.read_only)
    .join(User, User.id == AccessToken.user_id).outerjoin(Project, Project.id == AccessToken.project_id)
    .where(AccessToken.token_hash == bindparam("digest")))


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
    return shared_cache(request)


def shared_cache(request: Request) -> AuthCache | None:
    """The credential cache whatever the request's method, for a caller that resolves who is
    calling and changes nothing through the objects it gets (git's smart HTTP: authorized in a
    read, then git writes); None when the cache is off."""
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
        copy = Resolved(replace(principal, user=detached_copy(principal.user)),
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
    if is_pat:
        revoked_at, project_id, project_org_id, read_only = row[3], row[4], row[5], row[6]
        if revoked_at is not None:
            return None, None
        principal = Principal(user=user, kind="pat", credential_id=credential_id, project_id=project_id,
                              project_org_id=project_org_id, read_only=bool(read_only))
    else:
        principal = Principal(user=user, kind="session", credential_id=credential_id)
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
    check_limits(request, principal)
    return principal


# --- a personal access token's limits ---------------------------------------------------------------
#
# Enforced where a request resolves who is calling, before any handler runs: here for the routes
# outside an org (/v1/me..., /v1/orgs), auth/roles.py `org_access` for an org's path and
# auth/projects.py `project_access` for a project's, the API's and the dashboard's alike.
# - read-only: only GET, HEAD and OPTIONS; anything else is 403 token_read_only.
# - limited to a project: changes only under /v1/orgs/{org}/projects/{project}/ of that project;
#   reads of its own org's paths (the org, its project list) and outside any org (/v1/me); any other
#   org or project, even one that does not exist, is 403 token_project_limited.


def writes(request: Request) -> bool:
    return request.method not in READ_METHODS


def check_limits(request: Request, principal: Principal) -> None:
    """A request outside any org: a limited token may read only."""
    if not writes(request):
        return
    if principal.read_only:
        raise TokenReadOnly()
    if principal.project_id is not None:
        raise TokenProjectLimited()


def check_org_limits(request: Request, principal: Principal, org: Org | None, *, in_project: bool) -> None:
    """A request on an org's path (`org`: None when there is no such org or the caller is not a
    member); `in_project`: under one of its projects, which `check_project_limit` then checks."""
    if principal.read_only and writes(request):
        raise TokenReadOnly()
    if principal.project_id is None:
        return
    if org is None or org.id != principal.project_org_id:
        raise TokenProjectLimited("This token is limited to one project, in another org")
    if not in_project and writes(request):
        raise TokenProjectLimited("This token is limited to one project: it cannot change the org")


def check_project_limit(principal: Principal, project_id: str | None) -> None:
    """The project in the path (`project_id`: None when the org has no such project)."""
    if principal.project_id is not None and project_id != principal.project_id:
        raise TokenProjectLimited("This token is limited to one project, not this one")


async def session_principal(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
    if principal.kind != "session":
        raise SessionRequired()
    return principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]
SessionOnlyPrincipal = Annotated[Principal, Depends(session_principal)]
