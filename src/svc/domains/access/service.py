"""Access policy rules: the policy and bypass secret of a project, the org login round trip's
one-time codes, the edge's check, and the password page's sign-in. Services receive the unit of
work and flush; the unit of work commits. Every policy change moves the edge (projects.service.edge_changed)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from svc.adapters.edge.port import Route
from svc.adapters.edge.settings import edge_url
from svc.auth.caller import Principal
from svc.auth.roles import OrgAccess
from svc.domains.access import cookies, errors, queries
from svc.domains.access.schemas import AccessPolicy
from svc.domains.audit.service import record
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.domains.ratelimits import service as ratelimits
from svc.kit.clock import as_utc, utcnow
from svc.kit.crypto import Keyring
from svc.kit.hosts import normalize_host
from svc.kit.paths import safe_next
from svc.kit.store_session import StoreSession
from svc.kit.tokens import token_hash
from svc.models import PROTECTED_ACCESS_MODES, AccessGrant, AccessMode, Project
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.access")

# argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane): about 50 ms a hash here,
# so a guess is expensive and a policy change or a sign-in stays quick. Verification reads the
# parameters from the stored hash, so they can be raised later.
HASHER = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
GRANT_TTL = timedelta(seconds=60)
# Password tries (see password_sign_in).
TRIES_PER_CLIENT = 10
TRIES_PER_HOST = 100
TRIES_WINDOW = 60
BYPASS_PREFIX = "svc_byp_"



# --- inputs shared by the API and the edge endpoints ---


def _sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# --- the policy (API) ---


async def _changed(uow: UnitOfWork, project: Project) -> None:
    """Every policy change: old cookies and cached checks stop working; the edge converges."""
    project.access_generation = project.access_generation + 1
    await projects.edge_changed(uow, project.id)
    await uow.session.flush()


async def set_policy(uow: UnitOfWork, access: OrgAccess, project: Project, *, mode: AccessMode,
                     password: str | None) -> AccessPolicy:
    session = uow.session
    if mode == AccessMode.password and password is None and project.access_password_hash is None:
        raise errors.PasswordRequired()
    if password is not None:
        project.access_password_hash = await asyncio.to_thread(HASHER.hash, password)
    # public/org keep the stored hash, so switching back to password needs no password again.
    project.access_mode = mode
    await _changed(uow, project)
    await record(session, "access.set", actor=access.principal.user, org=access.org, target=project.name,
                 data={"mode": mode})
    log.info("access policy set: project=%s mode=%s", project.id, mode)
    return AccessPolicy.of(project)


async def new_bypass(uow: UnitOfWork, access: OrgAccess, project: Project) -> str:
    secret = BYPASS_PREFIX + secrets.token_urlsafe(32)
    project.bypass_secret_hash = _sha256(secret)
    await _changed(uow, project)
    await record(uow.session, "access.bypass.new", actor=access.principal.user, org=access.org, target=project.name)
    log.info("access bypass secret issued: project=%s", project.id)
    return secret


async def revoke_bypass(uow: UnitOfWork, access: OrgAccess, project: Project) -> None:
    had = project.bypass_secret_hash is not None
    if had:
        project.bypass_secret_hash = None
        await _changed(uow, project)
    await record(uow.session, "access.bypass.revoke", actor=access.principal.user, org=access.org,
                 target=project.name, data={"revoked": had})


# --- the org login round trip ---


@use_case(Tx.WRITE)  # a signed-in visit issues the one-time code at once, as an OAuth authorize does
async def authorize(uow: UnitOfWork, principal: Principal, *, to: str, next_path: str,
                    config: Config) -> str:
    """The redirect to the host's /__svc/callback with a one-time code (60 s) for this user."""
    session = uow.session
    path = safe_next(next_path)
    if path is None:
        raise errors.BadNext()
    host = normalize_host(to)
    if host is None:
        raise errors.BadHost(details={"field": "to"})
    route = await projects.route_for_host(uow, host)
    if route is None:
        raise errors.UnknownHostname(details={"host": host})
    if await orgs.role_in(uow, route.org_id, principal.user.id) is None:
        raise errors.NotOrgMember(details={"org": route.org_slug})
    code = secrets.token_urlsafe(32)
    now = utcnow()
    await queries.add_grant(session, AccessGrant(code_hash=token_hash(code), host=host, user_id=principal.user.id,
                                                 next_path=path, created_at=now, expires_at=now + GRANT_TTL), now)
    log.info("access authorized: host=%s user=%s", host, principal.user.id)
    return f"{edge_url(config, host)}/__svc/callback?code={code}&next={quote(path, safe='/')}"


@dataclass(frozen=True)
class Exchanged:
    cookie: str
    next_path: str


@use_case(Tx.WRITE)  # a GET (the host's /__svc/callback) that uses up the one-time code
async def exchange_code(uow: UnitOfWork, *, host: str, code: str | None) -> Exchanged | None:
    """The one-time code -> the host's cookie: single use, unexpired, and only on the host it was
    for. None when refused; a code that was found is used up even then (a refusal is an answer,
    not a failure: the unit of work commits)."""
    session, keys = uow.session, uow.ctx.keys
    if not code or len(code) > 256:
        return None
    grant = await queries.take_grant(session, token_hash(code))
    now = utcnow()
    if grant is None or as_utc(grant.expires_at) <= now or grant.host != host:
        return None
    route = await projects.route_for_host(uow, host)
    if route is None:
        return None
    claims = cookies.new_claims(project=route.project_id, host=host, mode=AccessMode.org, subject=grant.user_id,
                                generation=route.access_generation, now=now)
    log.info("access code exchanged: host=%s user=%s", host, grant.user_id)
    return Exchanged(cookie=cookies.issue(keys, claims), next_path=safe_next(grant.next_path) or "/")


# --- the edge's check ---


def login_url(config: Config, route: Route, uri: str | None) -> str:
    """Where the edge sends a browser the check refused."""
    path = safe_next(uri) or "/"
    if route.access_mode == AccessMode.password:
        return f"{edge_url(config, route.host)}/__svc/password?next={quote(path, safe='/')}"
    return (f"{config.settings.public_url}/access/authorize?to={quote(route.host, safe='')}"
            f"&next={quote(path, safe='/')}")


async def check(uow: UnitOfWork, *, host: str, uri: str | None, cookie_values: list[str],
                bypass: str | None) -> str | None:
    """None when the request may pass (a public host, a valid bypass secret, or any one of the
    svc_access values the browser sent); else the login URL for the X-Svc-Login header. A host
    that leads to no project is HostNotRouted: the check fails closed."""
    session, keys, config = uow.session, uow.ctx.keys, uow.ctx.config
    route = await projects.route_for_host(uow, host)
    if route is None:
        raise errors.HostNotRouted(details={"host": host})
    if route.access_mode not in PROTECTED_ACCESS_MODES:
        return None
    if bypass and len(bypass) <= 256:
        stored = await queries.bypass_hash(session, route.project_id)
        if stored is not None and hmac.compare_digest(stored, _sha256(bypass)):
            return None
    now = utcnow()
    for value in cookie_values:
        claims = cookies.read(keys, value, now)
        if (claims is None or claims.project != route.project_id or claims.host != route.host
                or claims.generation != route.access_generation or claims.mode != route.access_mode):
            continue
        if route.access_mode == AccessMode.password:
            return None
        # Org mode: the person must still be in the org, on every check.
        if await orgs.role_in(uow, route.org_id, claims.subject) is not None:
            return None
    return login_url(config, route, uri)


async def is_routed(uow: UnitOfWork, host: str) -> bool:
    return await projects.route_for_host(uow, host) is not None


async def forget_project_grants(session: StoreSession, project_id: str) -> None:
    """For a project's teardown: its one-time login codes (found by its hostnames)."""
    await queries.delete_grants_of_project(session, project_id)


# --- the password page ---


@dataclass(frozen=True)
class PasswordHost:
    """A host whose password page applies, or where to send the browser instead."""

    route: Route | None
    redirect: str | None


async def password_host(uow: UnitOfWork, host: str, next_path: str) -> PasswordHost:
    """The route of a host in password mode; a host in another mode sends the browser on to
    `next_path` (nothing to enter); a host svc does not route is UnknownHostname."""
    route = await projects.route_for_host(uow, host)
    if route is None:
        raise errors.UnknownHostname(details={"host": host})
    if route.access_mode != AccessMode.password:
        return PasswordHost(route=None, redirect=next_path)
    return PasswordHost(route=route, redirect=None)


@use_case(Tx.READ)  # a POST that writes nothing: argon2 runs with nothing of the store held
async def password_sign_in(uow: UnitOfWork, *, host: str, password: str, next_path: str,
                           client: str) -> str | None:
    """The cookie for the host when the password matches; None when the host is not in password
    mode (send the browser on). WrongPassword, TooManyTries or UnknownHostname otherwise.

    Tries are limited per host and client address, and per host overall (a backstop against
    guesses spread over many addresses, and against argon2 work flooding the server), counted in
    the store so that every svc process of it counts together."""
    wait = await ratelimits.hit(uow.ctx, [
        ratelimits.Limit(f"edge.password:{host}:{client}", TRIES_PER_CLIENT, TRIES_WINDOW),
        ratelimits.Limit(f"edge.password:{host}", TRIES_PER_HOST, TRIES_WINDOW)])
    if wait is not None:
        log.warning("password page rate limited: host=%s", host)
        raise errors.TooManyTries(details={"retryAfter": wait}, headers={"Retry-After": str(wait)})
    found = await password_host(uow, host, next_path)
    if found.route is None:
        return None
    route = found.route
    stored = await queries.password_hash(uow.session, route.project_id)
    await uow.close_reads()  # argon2 is slow on purpose: hold nothing meanwhile
    if not await password_matches(stored, password):
        log.info("password page: wrong password for host=%s", host)
        raise errors.WrongPassword()
    log.info("password page: signed in on host=%s", host)
    return password_cookie(uow.ctx.keys, route, utcnow())


async def password_matches(stored: str | None, password: str) -> bool:
    """argon2id verification, off the event loop (it is deliberately slow)."""
    if stored is None or not password or len(password) > 256:
        return False

    def verify() -> bool:
        try:
            return HASHER.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False

    return await asyncio.to_thread(verify)


def password_cookie(keys: Keyring, route: Route, now: datetime) -> str:
    return cookies.issue(keys, cookies.new_claims(project=route.project_id, host=route.host, mode=AccessMode.password,
                                                  subject=cookies.PASSWORD_SUBJECT,
                                                  generation=route.access_generation, now=now))
