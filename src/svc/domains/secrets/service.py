"""Secret rules: names, reserved names, versions, sealing. Services flush, never commit.

A value is sealed with the keyring (AES-GCM) bound to the context `<project id>/<name>`, so a
sealed value moved to another row or project does not unseal. Values are never returned, logged
or audited: audit rows carry the project and the secret's name only. `reveal` is for the worker
runtime that injects secrets as env.<NAME>; no route calls it.
"""

from __future__ import annotations

import re
from typing import Any

from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.projects import service as projects
from svc.domains.secrets import errors, queries
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import Project, Secret
from svc.uow import UnitOfWork

NAME_PATTERN = r"^[A-Z][A-Z0-9_]{0,63}$"
_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
RESERVED = frozenset({"DB", "ASSETS"})
RESERVED_PREFIX = "SVC_"
# Which version of each secret the worker's env holds (decisions.md: visible to the worker).
SECRET_VERSIONS = "SVC_SECRET_VERSIONS"
MAX_VALUE_BYTES = 65_536
MAX_SECRETS = 100  # per project (abuse prevention, like the pending-invite cap)


def check_name(name: str) -> None:
    """400 bad_request for a name breaking the rules, 400 reserved_name for DB, ASSETS and SVC_*."""
    if not _NAME.fullmatch(name):
        raise errors.BadSecretName(details={"pattern": NAME_PATTERN})
    if name in RESERVED or name.startswith(RESERVED_PREFIX):
        raise errors.ReservedName(details={"name": name})


def seal_context(project: Project, name: str) -> str:
    return f"{project.id}/{name}"


def _encode(value: str) -> bytes:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON \ud800 escape is not UTF-8 text
        raise errors.BadSecretValue() from None
    if len(raw) > MAX_VALUE_BYTES:
        raise errors.ValueTooLarge(details={"limit": MAX_VALUE_BYTES, "bytes": len(raw)})
    return raw


async def list_secrets(uow: UnitOfWork, project: Project) -> list[Secret]:
    session = uow.session
    return await queries.of_project(session, project.id)


async def set_secret(uow: UnitOfWork, ctx: AppContext, access: OrgAccess, project: Project, name: str,
                     value: str) -> Secret:
    """Create the secret at version 1, or replace its value and bump its version (not idempotent)."""
    session = uow.session
    check_name(name)
    raw = _encode(value)
    sealed = ctx.keys.seal(raw, context=seal_context(project, name))
    await queries.lock_project(session, project.id)
    now = utcnow()
    row = await queries.one(session, project.id, name)
    if row is None:
        total = await queries.count(session, project.id)
        if total >= MAX_SECRETS:
            raise errors.TooManySecrets(details={"limit": MAX_SECRETS, "count": total})
        row = Secret(project_id=project.id, name=name, version=1, sealed_value=sealed, updated_at=now)
        session.add(row)
    else:
        row.version += 1
        row.sealed_value = sealed
        row.updated_at = now
    await record(session, "secret.set", actor=access.principal.user, org=access.org,
                 target=f"{project.name}/{name}", data={"project": project.name, "name": name, "version": row.version})
    await session.flush()
    await projects.bindings_changed(uow, project.id)
    return row


async def delete_secret(uow: UnitOfWork, access: OrgAccess, project: Project, name: str) -> None:
    session = uow.session
    check_name(name)
    await queries.lock_project(session, project.id)
    row = await queries.one(session, project.id, name)
    if row is None:
        raise errors.SecretNotFound(details={"name": name})
    await session.delete(row)
    await record(session, "secret.delete", actor=access.principal.user, org=access.org,
                 target=f"{project.name}/{name}", data={"project": project.name, "name": name})
    await session.flush()
    await projects.bindings_changed(uow, project.id)


async def worker_env(session: StoreSession, ctx: AppContext, project: Project) -> dict[str, Any]:
    """The secrets' bindings (the area's manifest declares them): each secret's plaintext as
    env.<NAME>, and env.SVC_SECRET_VERSIONS, {name: version}. For the worker runtime only."""
    env: dict[str, Any] = {}
    versions: dict[str, int] = {}
    for row in await queries.of_project(session, project.id):
        env[row.name] = _plaintext(ctx, project, row)
        versions[row.name] = row.version
    return env | {SECRET_VERSIONS: versions}


async def reveal(session: StoreSession, ctx: AppContext, project: Project, name: str) -> str:
    """The plaintext of one secret (worker_env gives the runtime all of them). Never route this."""
    row = await queries.one(session, project.id, name)
    if row is None:
        raise errors.SecretNotFound(details={"name": name})
    return _plaintext(ctx, project, row)


def _plaintext(ctx: AppContext, project: Project, row: Secret) -> str:
    return ctx.keys.unseal(row.sealed_value, context=seal_context(project, row.name)).decode("utf-8")
