"""The `svc_auth` schema in the project's own database: its end users, their identities at the
providers and their sessions (the auth service on the project's hosts writes them; svc's API never
reads them). Created at grant and migrated by svc, as the project's own role (the owner of its
database, so the project may read them with env.db), through the databases area's env.db path.

Each version is a list of statements safe to run again (IF NOT EXISTS): a grant repeated, or one
that crashed half way, ends on the same schema. The applied versions are kept in
`svc_auth.migrations`; a revoke leaves the schema and its rows as they are."""

from __future__ import annotations

from typing import Any

from svc.domains.databases import errors as database_errors
from svc.domains.databases import schemas as database_schemas
from svc.domains.databases import service as databases
from svc.uow import UnitOfWork

SCHEMA = "svc_auth"

# (version, statements): append a version, never change one that shipped.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (1, (
        "CREATE TABLE IF NOT EXISTS svc_auth.users (id text PRIMARY KEY, email text, "
        "email_verified boolean NOT NULL DEFAULT false, name text, avatar_url text, "
        "created_at timestamptz NOT NULL DEFAULT now(), last_seen_at timestamptz)",
        "CREATE INDEX IF NOT EXISTS users_email ON svc_auth.users (lower(email))",
        "CREATE TABLE IF NOT EXISTS svc_auth.identities (provider text NOT NULL, subject text NOT NULL, "
        "user_id text NOT NULL REFERENCES svc_auth.users (id) ON DELETE CASCADE, email text, "
        "created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (provider, subject))",
        "CREATE INDEX IF NOT EXISTS identities_user ON svc_auth.identities (user_id)",
        "CREATE TABLE IF NOT EXISTS svc_auth.sessions (id_hash text PRIMARY KEY, "
        "user_id text NOT NULL REFERENCES svc_auth.users (id) ON DELETE CASCADE, "
        "created_at timestamptz NOT NULL DEFAULT now(), expires_at timestamptz NOT NULL, ended_at timestamptz)",
        "CREATE INDEX IF NOT EXISTS sessions_user ON svc_auth.sessions (user_id)",
        "CREATE INDEX IF NOT EXISTS sessions_expiry ON svc_auth.sessions (expires_at)",
    )),
)
LATEST = MIGRATIONS[-1][0]


async def _run(uow: UnitOfWork, project_id: str, sql: str, params: list[Any] | None = None,
               tx: str | None = None) -> dict[str, Any]:
    call = database_schemas.RuntimeQuery(op="query", sql=sql, params=params or [], tx=tx)
    return await databases.run_query(uow, project_id, call)


async def migrate(uow: UnitOfWork, project_id: str) -> int:
    """Bring the project's svc_auth schema to LATEST, in one transaction of its database (two grants
    at once take turns on an advisory lock). Called in a read unit of work's read phase (it may
    close the reads: the project's password is read once). The version now."""
    opened = await databases.run_query(uow, project_id, database_schemas.RuntimeQuery(op="begin"))
    tx = str(opened["tx"])
    done = False
    try:
        await _run(uow, project_id, "SELECT pg_advisory_xact_lock(hashtext('svc_auth'))", tx=tx)
        await _run(uow, project_id, f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}", tx=tx)
        await _run(uow, project_id, "CREATE TABLE IF NOT EXISTS svc_auth.migrations (version integer PRIMARY KEY, "
                                    "applied_at timestamptz NOT NULL DEFAULT now())", tx=tx)
        applied = {int(r[0]) for r in (await _run(uow, project_id, "SELECT version FROM svc_auth.migrations",
                                                  tx=tx))["rows"]}
        for version, statements in MIGRATIONS:
            if version in applied:
                continue
            for statement in statements:
                await _run(uow, project_id, statement, tx=tx)
            await _run(uow, project_id, "INSERT INTO svc_auth.migrations (version) VALUES ($1) "
                                        "ON CONFLICT DO NOTHING", [version], tx=tx)
        done = True
    finally:
        await databases.run_query(uow, project_id, database_schemas.RuntimeQuery(op="commit" if done else "rollback",
                                                                                 tx=tx))
    return LATEST


async def forget_identities(uow: UnitOfWork, project_id: str, provider: str) -> None:
    """A provider removed: its identities go, the end users stay (they may sign in with another
    provider, or with this one again once it is set: a new identity, linked by verified email)."""
    try:
        await _run(uow, project_id, "DELETE FROM svc_auth.identities WHERE provider = $1", [provider])
    except database_errors.QueryFailed as exc:
        if (exc.details or {}).get("sqlstate") != "42P01":  # no svc_auth schema: nothing to forget
            raise


async def subscriber_count(uow: UnitOfWork, project_id: str) -> int | None:
    """The project's end users (the dashboard's count); None when its database cannot say now."""
    try:
        found = await _run(uow, project_id, "SELECT count(*) FROM svc_auth.users")
    except (database_errors.QueryFailed, database_errors.DatabasesOff, database_errors.NodeUnavailable,
            database_errors.DatabaseNotFound):
        return None
    return int(found["rows"][0][0])
