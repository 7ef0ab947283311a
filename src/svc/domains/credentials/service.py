"""Rules for personal access tokens and SSH keys. Services flush, never commit.

Only a token's SHA-256 hash and a short hint are stored; the plaintext leaves the server once, in
the create response. Revoking keeps the row (revokedAt) and takes effect at once, because every
request resolves its Bearer token against the store (svc.auth.principal). No audit events: the spec
names none for these, and nothing about a credential is written to logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.exc import IntegrityError

from svc.auth.projects import OperationInFlight, ProjectNotFound, project_by_name
from svc.auth.roles import OrgNotFound
from svc.domains.credentials import errors, queries, schemas
from svc.domains.credentials.sshkeys import parse_public_key
from svc.domains.orgs import service as orgs
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.tokens import PAT_PREFIX, new_personal_access_token, token_hash
from svc.models import AccessToken, Project, ProjectState, SSHKey, User
from svc.uow import UnitOfWork

MAX_ACTIVE_TOKENS = 100  # per user; revoked and expired tokens do not count
MAX_SSH_KEYS = 100  # per user
HINT_CHARS = 4  # random characters after the prefix kept as the hint


@dataclass(frozen=True)
class Token:
    """A token as listed: its row and the project it is limited to, by its names as they are now."""

    row: AccessToken
    project: schemas.TokenProject | None


@dataclass(frozen=True)
class NewToken(Token):
    plaintext: str


async def list_tokens(uow: UnitOfWork, user: User) -> list[Token]:
    session = uow.session
    return [Token(row, None if org is None or project is None else schemas.TokenProject(org=org, name=project))
            for row, org, project in await queries.tokens_of(session, user.id)]


async def projects_to_limit_to(uow: UnitOfWork, user: User) -> list[schemas.TokenProject]:
    """The projects a new token of the user's may be limited to: those of every org they are in."""
    return [schemas.TokenProject(org=org, name=name)
            for org, name in await queries.projects_of_member(uow.session, user.id)]


async def _project(uow: UnitOfWork, user: User, ref: schemas.TokenProjectRef) -> Project:
    """The project a token is to be limited to: it exists and the user is a member of its org (any
    role; the token never does more than its user may). Otherwise 404, as its path would be."""
    org = await orgs.org_by_slug(uow, ref.org)
    if org is None or await orgs.role_in(uow, org.id, user.id) is None:
        raise OrgNotFound()
    project = await project_by_name(uow.session, org.id, ref.name)
    if project is None:
        raise ProjectNotFound()
    if project.state != ProjectState.active:
        raise OperationInFlight("The project is being deleted")
    return project


async def create_token(uow: UnitOfWork, user: User, *, name: str, expires_in_days: int | None,
                       project: schemas.TokenProjectRef | None = None, read_only: bool = False) -> NewToken:
    """A token acting as `user`; `project`: limited to that project, `read_only`: to reading.
    Creating one needs a session (the routes' SessionOnlyPrincipal), so a token cannot mint a wider one."""
    session = uow.session
    now = utcnow()
    limited_to = await _project(uow, user, project) if project is not None else None
    await queries.lock_user(session, user.id)
    active = await queries.active_token_count(session, user.id, now)
    if active >= MAX_ACTIVE_TOKENS:
        raise errors.TooManyTokens(details={"limit": MAX_ACTIVE_TOKENS, "count": active})
    plaintext = new_personal_access_token()
    row = AccessToken(
        id=new_id("pat"), user_id=user.id, name=name, token_hash=token_hash(plaintext),
        hint=plaintext[: len(PAT_PREFIX) + HINT_CHARS], created_at=now,
        expires_at=now + timedelta(days=expires_in_days) if expires_in_days is not None else None,
        revoked_at=None, last_used_at=None, project_id=None if limited_to is None else limited_to.id,
        read_only=read_only)
    session.add(row)
    await session.flush()
    shown = None if project is None else schemas.TokenProject(org=project.org, name=project.name)
    return NewToken(row=row, project=shown, plaintext=plaintext)


async def revoke_token(uow: UnitOfWork, user: User, token_id: str) -> None:
    """Idempotent for the owner: revoking a revoked token is a 204 and keeps the first revokedAt.
    Another user's token and an unknown id are both 404."""
    session = uow.session
    row = await queries.token_of(session, user.id, token_id)
    if row is None:
        raise errors.TokenNotFound()
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        await session.flush()


async def list_keys(uow: UnitOfWork, user: User) -> list[SSHKey]:
    session = uow.session
    return await queries.keys_of(session, user.id)


async def add_key(uow: UnitOfWork, user: User, *, name: str, public_key: str) -> SSHKey:
    session = uow.session
    parsed = parse_public_key(public_key)
    await queries.lock_user(session, user.id)
    if await queries.key_by_fingerprint(session, parsed.fingerprint) is not None:
        raise errors.SSHKeyExists(details={"fingerprint": parsed.fingerprint})
    count = await queries.key_count(session, user.id)
    if count >= MAX_SSH_KEYS:
        raise errors.TooManySSHKeys(details={"limit": MAX_SSH_KEYS, "count": count})
    row = SSHKey(id=new_id("key"), user_id=user.id, name=name, key_type=parsed.key_type, bits=parsed.bits,
                 public_key=parsed.public_key, fingerprint=parsed.fingerprint, created_at=utcnow())
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError:
        # Another request registered the same key between the check and the insert.
        if await queries.key_by_fingerprint(session, parsed.fingerprint) is None:
            raise
        raise errors.SSHKeyExists(details={"fingerprint": parsed.fingerprint}) from None
    return row


async def delete_key(uow: UnitOfWork, user: User, key_id: str) -> None:
    session = uow.session
    row = await queries.key_of(session, user.id, key_id)
    if row is None:
        raise errors.SSHKeyNotFound()
    await session.delete(row)
    await session.flush()
