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

from svc.adapters.database.port import (
    ColdSession,
    DatabaseEndpoint,
    DatabaseNode,
    DatabaseNodeError,
    ProjectLimits,
    SqlError,
)
from svc.adapters.workers.port import EntrypointBinding
from svc.auth.principal import resolve
from svc.auth.projects import ProjectNotFound, project_by_name
from svc.auth.roles import OrgAccess, check_role
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.databases import errors, generations, queries, schemas
from svc.domains.databases.node import answering, limits_for, node_of
from svc.domains.notifications import service as notifications
from svc.domains.operations.service import running_for
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.errors import SessionRequired, Unauthorized
from svc.kit.clock import utcnow
from svc.kit.scram import verifier
from svc.kit.store_session import StoreSession
from svc.models import DatabaseToken, GenerationKind, OperationKind, Project, ProjectDatabase, Role
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

# The binding the runtime gives a project's worker (the wrapper presents it as env.db).
BINDING = "__SVC_DB__"
ENTRYPOINT = "Database"


def role_of(ctx: AppContext, project: Project) -> str:
    """The project's login role on the node (the user of its connection details)."""
    return node_of(ctx).names(project.id)[1]


def _seal_context(project_id: str) -> str:
    return f"database/{project_id}"


def password_of(ctx: AppContext, row: ProjectDatabase) -> str:
    """The project's password, unsealed (kept in memory only, never logged)."""
    return ctx.keys.unseal(row.sealed_password, context=_seal_context(row.project_id)).decode()


def _connect(node: DatabaseNode, project_id: str, password: str) -> schemas.DatabaseConnect:
    endpoint = _endpoint(node, project_id)
    return schemas.DatabaseConnect(host=endpoint.host, port=endpoint.port, database=endpoint.database,
                                   sslmode=endpoint.sslmode, user=node.names(project_id)[1], password=password)


def _endpoint(node: DatabaseNode, project_id: str) -> DatabaseEndpoint:
    with answering():
        return node.endpoint(project_id)


async def _provision(node: DatabaseNode, project_id: str, password: str, limits: ProjectLimits) -> None:
    with answering():
        await node.provision(project_id, verifier(password), limits)


async def has_database(uow: UnitOfWork, project: Project) -> bool:
    return await database_granted(uow.session, project)


async def database_granted(session: StoreSession, project: Project) -> bool:
    """Whether the project has its database (the area's manifest declares it: the Overview)."""
    return await queries.grant(session, project.id) is not None


@use_case(Tx.READ_THEN_WRITE)  # CREATE DATABASE runs with nothing of the store held
async def create_database(uow: UnitOfWork, access: OrgAccess, project: Project) -> schemas.DatabaseConnect:
    ctx = uow.ctx
    node = node_of(ctx)
    row = await queries.grant(uow.session, project.id)
    password = password_of(ctx, row) if row is not None else secrets.token_urlsafe(24)
    limits = limits_for(ctx.config, access.org.plan)
    await uow.close_reads()
    await _provision(node, project.id, password, limits)
    if row is not None:
        return _connect(node, project.id, password)
    session = await uow.begin_write()
    await queries.lock_project(session, project.id)
    row = await queries.grant(session, project.id)
    if row is not None:
        # Another request created it meanwhile: its password is the project's; the node gets it
        # again, after ours (every loser of the race ends on the winner's).
        password = password_of(ctx, row)
        await _provision(node, project.id, password, limits)
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
    return _connect(node_of(uow.ctx), project.id, password_of(uow.ctx, row))


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
    limits = limits_for(uow.ctx.config, access.org.plan)
    allowed = orgs.limits_of(uow.ctx.config, access.org.plan).db_token_users
    held = await queries.count_tokens(uow.session, project.id, now=now)
    if held >= allowed:
        raise errors.TooManyTokens(f"This project holds {held} token users, its plan's most; delete one or let it "
                                   "expire", details={"limit": allowed})
    expired = await queries.expired_tokens(uow.session, project.id, now=now)
    await uow.close_reads()
    user = f"{node.names(project.id)[1]}_t{secrets.token_hex(6)}"
    password = secrets.token_urlsafe(24)
    expires_at = (now + timedelta(minutes=body.expires_in_minutes)).replace(microsecond=0)
    with answering():
        for old in expired:  # their VALID UNTIL passed already; the roles go with their rows
            await node.drop_login(project.id, old)
        await node.add_login(project.id, user, verifier(password), expires_at, limits)
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
    with answering():
        await node.drop_login(project.id, user)
    session = await uow.begin_write()
    await queries.delete_tokens(session, [user])
    await record(session, "database.token.delete", actor=access.principal.user, org=access.org,
                 target=f"{project.name}/{user}", data={"project": project.name, "user": user})
    await session.flush()


# --- env.db ---


def databases_off(ctx: AppContext) -> str | None:
    """Why no project can get a database on this svc now (`svc serve`'s words), or None."""
    try:
        node_of(ctx)
    except errors.DatabasesOff as exc:
        return exc.message
    return None


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
    back to the worker as its SQLSTATE and message (422 sql_error). While the project's
    connections are open in this process the store is not read at all (the password opened them;
    a deleted database closes them)."""
    node = node_of(uow.ctx)
    try:
        with answering():
            try:
                return await _run(node, project_id, None, call)
            except ColdSession:
                return await _run(node, project_id, await _project_password(uow, project_id), call)
    except SqlError as exc:
        raise errors.QueryFailed(exc.message, details={"sqlstate": exc.code}) from None


async def _project_password(uow: UnitOfWork, project_id: str) -> str:
    row = await queries.grant(uow.session, project_id)
    if row is None:
        raise errors.DatabaseNotFound()
    password = password_of(uow.ctx, row)
    await uow.close_reads()
    return password


async def _run(node: DatabaseNode, project_id: str, password: str | None, call: schemas.RuntimeQuery) -> dict[str, Any]:
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
    return {"fields": result.fields, "rows": result.rows, "rowCount": result.row_count, "command": result.command}


# --- generations, export, teardown ---


@use_case(Tx.READ)
async def list_generations(uow: UnitOfWork, project: Project) -> schemas.Generations:
    """svc's own table: no live database needed (a deleted database's final generation shows)."""
    rows = await queries.generations(uow.session, project.id, [k.value for k in generations.LISTED])
    grant = await queries.grant(uow.session, project.id)
    return schemas.Generations(
        generations=[schemas.GenerationView(epoch=g.epoch, seq=g.seq, bytes=g.bytes, sha256=g.sha256,
                                            offsite_key=g.blob_key, created_at=g.created_at, kind=g.kind,
                                            verified=g.verified, restore_seconds=g.restore_seconds)
                     for g in rows],
        last_checked_at=grant.last_checked_at if grant is not None else None)


@use_case(Tx.READ_THEN_WRITE)  # pg_dump runs with nothing of the store held
async def export(uow: UnitOfWork, access: OrgAccess, project: Project) -> schemas.DatabaseExport:
    """A diagnostic image under the current (project, epoch): never listed, never selected by
    restore, never pruned. Not idempotent: each call makes another."""
    node = node_of(uow.ctx)
    grant = await _grant(uow, project)
    running = await running_for(uow, project.id)
    if running is not None and running.kind != OperationKind.backup:  # (a backup leaves the database open)
        raise errors.Suspended()
    epoch = grant.epoch
    await uow.close_reads()
    try:
        taken = await generations.take(uow.ctx, node, project.id, epoch)
    except DatabaseNodeError as exc:
        raise errors.ExportFailed(f"The database node could not make the export: {exc}") from None
    session = await uow.begin_write()
    await queries.lock_project(session, project.id)
    seq = await queries.next_seq(session, project.id, epoch, [GenerationKind.export.value])
    session.add(generations.row_of(taken, project.id, epoch, seq, GenerationKind.export))
    await record(session, "database.export", actor=access.principal.user, org=access.org, target=project.name,
                 data={"project": project.name, "key": taken.blob_key})
    return schemas.DatabaseExport(key=taken.blob_key)


async def record_verification(uow: UnitOfWork, generation_id: str, result: generations.Verification) -> bool:
    """A generation's restore check, written (its unit of work writing); one that failed is a
    notification to the org. Whether it was proven."""
    session = uow.session
    row = await queries.generation(session, generation_id)
    if row is None:
        return False
    row.verified = result.verified
    row.restore_seconds = result.restore_seconds
    row.verify_error = result.error
    if result.verified:
        return True
    project = await projects.project_by_id(session, row.project_id)
    org = await orgs.org_by_id(uow, project.org_id) if project is not None else None
    if project is not None and org is not None:
        await notifications.mailed(
            uow, org, kind="backup.unverified", project=project.name, settings=uow.ctx.settings,
            subject=f"a backup of {project.name}'s database could not be restored",
            message=f"Generation {row.epoch}.{row.seq} of {project.name}'s database did not pass its restore "
                    f"check: {result.error}. The database itself is untouched; the next change takes a new "
                    "generation.", data={"epoch": row.epoch, "seq": row.seq})
    return False


async def teardown_take(uow: UnitOfWork, project_id: str) -> generations.Taken | None:
    """Project teardown's database phase, its node work (the unit of work's reads are closed by
    it): the database drained and its final generation taken, then dropped. None: nothing to do."""
    node = uow.ctx.adapters.database
    grant = await queries.grant(uow.session, project_id)
    await uow.close_reads()
    if node is None or grant is None:
        return None
    with answering():
        await node.drain(project_id)
        taken = await generations.take(uow.ctx, node, project_id, grant.epoch)
        await node.drop(project_id)
    return taken


async def teardown_record(uow: UnitOfWork, project_id: str, taken: generations.Taken | None) -> None:
    """Teardown's database phase, its writes: the final generation listed, the grant gone."""
    session = uow.session
    grant = await queries.grant(session, project_id)
    if taken is not None and grant is not None:
        seq = await queries.next_seq(session, project_id, grant.epoch, [k.value for k in generations.LISTED])
        session.add(generations.row_of(taken, project_id, grant.epoch, seq, GenerationKind.final))
    await queries.delete_tokens(session, await queries.token_users(session, project_id))
    if grant is not None:
        await session.delete(grant)


# --- the port-forward path ---


async def tunnel_target(ctx: AppContext, token: str | None, org_slug: str,
                        project_name: str) -> tuple[DatabaseNode, str, str]:
    """Who may open a tunnel to a project's database (`svc db proxy`): a login session (spec 5.7:
    not an access token) of a member or higher. The node, the project's id and its password, for
    svc to log in with; the caller never sees the password."""
    if token is None:
        raise Unauthorized()
    async with unit_of_work(ctx, Tx.READ) as uow:
        resolved = await resolve(uow.session, token, org_slug)
        if resolved is None:
            raise Unauthorized("The token is invalid, expired or revoked")
        if resolved.principal.kind != "session":
            raise SessionRequired("The database tunnel opens with a login session (svc login), not an access token")
        access = check_role(resolved.org, resolved.role, resolved.principal, Role.member)
        project = await project_by_name(uow.session, access.org.id, project_name)
        if project is None:
            raise ProjectNotFound()
        row = await _grant(uow, project)
        return node_of(ctx), project.id, password_of(ctx, row)
