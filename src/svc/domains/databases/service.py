"""Project databases: the grant (one database and one login role per project on the node), its
credentials, token users, and env.db. Services flush, never commit.

The project's password is made once, sealed with the keyring bound to the project's id, and never
rotated: create is idempotent and a repeat re-reads it (and provisions again, which heals a node
that lost the role). The node gets only SCRAM verifiers. A token user's password is returned once;
svc keeps its name and expiry, PostgreSQL its verifier and `VALID UNTIL`.

Node calls (CREATE DATABASE, CREATE ROLE) run with nothing of the store held (READ_THEN_WRITE):
the node first, then the row, so a crash between them leaves a role a repeat will set again.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from svc.adapters.database.port import DatabaseEndpoint, DatabaseNode, DatabaseNodeError, SqlError
from svc.adapters.database.scram import verifier
from svc.adapters.workers.port import EntrypointBinding
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.databases import errors, queries, schemas
from svc.domains.projects import service as projects
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import DatabaseToken, Project, ProjectDatabase
from svc.uow import Tx, UnitOfWork, use_case

MAX_TOKENS = 50  # token users a project may hold at once (abuse prevention)
# The binding the runtime gives a project's worker (the wrapper presents it as env.db).
BINDING = "__SVC_DB__"
ENTRYPOINT = "Database"


def node_of(ctx: AppContext) -> DatabaseNode:
    node = ctx.adapters.database
    if node is None:
        reason = ctx.adapters.off.get("database")
        raise errors.DatabasesOff(f"Project databases are off on this server: {reason}" if reason else None)
    return node


def role_of(ctx: AppContext, project: Project) -> str:
    """The project's login role on the node (the user of its connection details)."""
    return node_of(ctx).names(project.id)[1]


def _seal_context(project_id: str) -> str:
    return f"database/{project_id}"


def _password(ctx: AppContext, row: ProjectDatabase) -> str:
    return ctx.keys.unseal(row.sealed_password, context=_seal_context(row.project_id)).decode()


def _connect(node: DatabaseNode, project_id: str, password: str) -> schemas.DatabaseConnect:
    endpoint = _endpoint(node, project_id)
    return schemas.DatabaseConnect(host=endpoint.host, port=endpoint.port, database=endpoint.database,
                                   sslmode=endpoint.sslmode, user=node.names(project_id)[1], password=password)


def _endpoint(node: DatabaseNode, project_id: str) -> DatabaseEndpoint:
    try:
        return node.endpoint(project_id)
    except DatabaseNodeError as exc:
        raise errors.NodeUnavailable(str(exc)) from None


async def _provision(node: DatabaseNode, project_id: str, password: str) -> None:
    try:
        await node.provision(project_id, verifier(password))
    except DatabaseNodeError as exc:
        raise errors.NodeUnavailable(str(exc)) from None


async def has_database(uow: UnitOfWork, project: Project) -> bool:
    return await queries.grant(uow.session, project.id) is not None


@use_case(Tx.READ_THEN_WRITE)  # CREATE DATABASE runs with nothing of the store held
async def create_database(uow: UnitOfWork, access: OrgAccess, project: Project) -> schemas.DatabaseConnect:
    ctx = uow.ctx
    node = node_of(ctx)
    row = await queries.grant(uow.session, project.id)
    password = _password(ctx, row) if row is not None else secrets.token_urlsafe(24)
    await uow.close_reads()
    await _provision(node, project.id, password)
    if row is not None:
        return _connect(node, project.id, password)
    session = await uow.begin_write()
    await queries.lock_project(session, project.id)
    row = await queries.grant(session, project.id)
    if row is not None:
        # Another request created it meanwhile: its password is the project's; the node gets it
        # again, after ours (every loser of the race ends on the winner's).
        password = _password(ctx, row)
        await _provision(node, project.id, password)
        return _connect(node, project.id, password)
    session.add(ProjectDatabase(project_id=project.id, created_at=utcnow(), created_by=access.principal.user.id,
                                sealed_password=ctx.keys.seal(password.encode(), context=_seal_context(project.id))))
    await record(session, "database.create", actor=access.principal.user, org=access.org, target=project.name,
                 data={"project": project.name})
    await session.flush()
    await projects.bindings_changed(uow, project.id)  # env.db at the next load, no redeploy
    return _connect(node, project.id, password)


async def _grant(uow: UnitOfWork, project: Project) -> ProjectDatabase:
    row = await queries.grant(uow.session, project.id)
    if row is None:
        raise errors.DatabaseNotFound()
    return row


@use_case(Tx.READ)
async def connect(uow: UnitOfWork, project: Project) -> schemas.DatabaseConnect:
    """The one read of the project's password (member or higher)."""
    row = await _grant(uow, project)
    return _connect(node_of(uow.ctx), project.id, _password(uow.ctx, row))


def endpoint(ctx: AppContext, project: Project) -> schemas.DatabaseEndpointView:
    found = _endpoint(node_of(ctx), project.id)
    return schemas.DatabaseEndpointView(host=found.host, port=found.port, database=found.database,
                                        sslmode=found.sslmode)


async def list_tokens(uow: UnitOfWork, project: Project) -> list[DatabaseToken]:
    await _grant(uow, project)
    return await queries.tokens(uow.session, project.id, now=utcnow())


@use_case(Tx.READ_THEN_WRITE)  # CREATE ROLE runs with nothing of the store held
async def create_token(uow: UnitOfWork, access: OrgAccess, project: Project,
                       body: schemas.TokenCreate) -> schemas.DatabaseToken:
    node = node_of(uow.ctx)
    await _grant(uow, project)
    now = utcnow()
    held = await queries.count_tokens(uow.session, project.id, now=now)
    if held >= MAX_TOKENS:
        raise errors.TooManyTokens(details={"limit": MAX_TOKENS})
    expired = await queries.expired_tokens(uow.session, project.id, now=now)
    await uow.close_reads()
    user = f"{node.names(project.id)[1]}_t{secrets.token_hex(6)}"
    password = secrets.token_urlsafe(24)
    expires_at = (now + timedelta(minutes=body.expires_in_minutes)).replace(microsecond=0)
    try:
        for old in expired:  # their VALID UNTIL passed already; the roles go with their rows
            await node.drop_login(project.id, old)
        await node.add_login(project.id, user, verifier(password), expires_at)
    except DatabaseNodeError as exc:
        raise errors.NodeUnavailable(str(exc)) from None
    session = await uow.begin_write()
    await queries.delete_tokens(session, expired)
    session.add(DatabaseToken(user=user, project_id=project.id, created_at=now, expires_at=expires_at,
                              created_by=access.principal.user.id))
    await record(session, "database.token.create", actor=access.principal.user, org=access.org,
                 target=f"{project.name}/{user}", data={"project": project.name, "user": user,
                                                        "expiresAt": expires_at.isoformat()})
    await session.flush()
    return schemas.DatabaseToken(user=user, password=password, expires_at=expires_at)


@use_case(Tx.READ_THEN_WRITE)
async def delete_token(uow: UnitOfWork, access: OrgAccess, project: Project, user: str) -> None:
    node = node_of(uow.ctx)
    if await queries.token(uow.session, project.id, user) is None:
        raise errors.TokenNotFound(details={"user": user})
    await uow.close_reads()
    try:
        await node.drop_login(project.id, user)
    except DatabaseNodeError as exc:
        raise errors.NodeUnavailable(str(exc)) from None
    session = await uow.begin_write()
    await queries.delete_tokens(session, [user])
    await record(session, "database.token.delete", actor=access.principal.user, org=access.org,
                 target=f"{project.name}/{user}", data={"project": project.name, "user": user})
    await session.flush()


# --- env.db ---


async def worker_env(session: StoreSession, ctx: AppContext, project: Project) -> dict[str, Any]:
    """env.db for a project with a database (the area's manifest declares it): a binding to the
    runtime's Database entrypoint, which sends the worker's SQL to svc. No credential goes to the
    worker: svc connects as the project's role itself (run_query)."""
    if ctx.adapters.database is None or await queries.grant(session, project.id) is None:
        return {}
    return {BINDING: EntrypointBinding(entrypoint=ENTRYPOINT, props={"project": project.id})}


@use_case(Tx.READ)
async def run_query(uow: UnitOfWork, project_id: str, call: schemas.RuntimeQuery) -> dict[str, Any]:
    """One env.db call of a project's worker, as the project's role. PostgreSQL's refusal goes
    back to the worker as its SQLSTATE and message (422 sql_error)."""
    node = node_of(uow.ctx)
    row = await queries.grant(uow.session, project_id)
    if row is None:
        raise errors.DatabaseNotFound()
    password = _password(uow.ctx, row)
    await uow.close_reads()
    try:
        if call.op == "begin":
            return {"tx": await node.begin(project_id, password)}
        if call.op in ("commit", "rollback"):
            if call.tx is None:
                raise errors.QueryFailed("no transaction named", details={"sqlstate": "25P01"})
            await node.finish(project_id, call.tx, commit=call.op == "commit")
            return {}
        if call.sql is None:
            raise errors.QueryFailed("no SQL given", details={"sqlstate": "42601"})
        result = await node.query(project_id, password, call.sql, call.params, call.tx)
    except SqlError as exc:
        raise errors.QueryFailed(exc.message, details={"sqlstate": exc.code}) from None
    except DatabaseNodeError as exc:
        raise errors.NodeUnavailable(str(exc)) from None
    return {"fields": result.fields, "rows": result.rows, "rowCount": result.row_count, "command": result.command}
