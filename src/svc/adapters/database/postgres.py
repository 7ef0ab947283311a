"""The database node on a PostgreSQL cluster, reached with an administrator's connection
(SVC_PROJECT_DB_ADMIN_URL, or the private cluster's: process.py).

A project has a database and a login role of the same name (`p_<24 hex digits>`, from its id:
lower case, so a psql user types it as it is). The role has no rights beyond its database: no
superuser, no CREATEDB, no CREATEROLE, no replication; CONNECT on its database is revoked from
PUBLIC and granted to the role alone, so no other project's role can even open it; the role holds
its share of the project's connection ceiling (ceilings.py) and has its plan's bounds as defaults,
which the watchdog (watch()) holds whatever a session sets. Token users are login roles that are members
of the project's role (their sessions act as it: `SET ROLE` is automatic through INHERIT and
the objects they make belong to the project's role by default privileges of ownership)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from svc.adapters.database import backups, ceilings, proxy
from svc.adapters.database.port import DatabaseEndpoint, DatabaseNodeError, ProjectLimits, QueryResult, Watched
from svc.adapters.database.sessions import ProjectSessions
from svc.kit import scram

log = logging.getLogger("svc.database")

# What every svc-made role gets, on top of LOGIN.
ROLE_OPTIONS = "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
# Dumps and restores at once per process: each holds two connections of svc's reserve.
HEAVY_AT_ONCE = 2

# One watchdog turn (watch()): each project session's bounds by its project's role (a token user's
# name starts with it), the default for a role no project named; a statement running past its
# bound is cancelled, a transaction idle past its bound ended. One statement, so what is acted on
# is what was just seen (a statement that finished meanwhile is not the one cancelled).
WATCH = """
with bound as (select * from unnest($1::text[], $2::float8[], $3::float8[]) as b(role, statement, idle)),
seen as (
    select a.pid, a.state, now() - a.query_start as running, now() - a.state_change as still,
           coalesce(b.statement, $4) as statement, coalesce(b.idle, $5) as idle
    from pg_stat_activity a left join bound b on b.role = substr(a.usename, 1, 26)
    where a.backend_type = 'client backend' and a.usename ~ $6 and a.pid <> pg_backend_pid())
select pid, 'cancel' from seen
where state = 'active' and running > make_interval(secs => statement) and pg_cancel_backend(pid)
union all
select pid, 'end' from seen
where state like 'idle in transaction%' and still > make_interval(secs => idle) and pg_terminate_backend(pid)
"""


def ident(name: str) -> str:
    """A quoted SQL identifier (svc's own names: letters, digits and underscores)."""
    if not name or not all(c.isascii() and (c.isalnum() or c == "_") for c in name):
        raise DatabaseNodeError(f"not a name svc makes: {name!r}")
    return f'"{name}"'


def literal(value: str) -> str:
    """A quoted SQL string literal (DDL takes no parameters)."""
    return "'" + value.replace("'", "''") + "'"


class PostgresNode:
    """DatabaseNode (port.py) on a cluster svc administers through `admin_url`."""

    def __init__(self, admin_url: str, *, public_host: str | None = None, public_port: int | None = None,
                 sslmode: str = "disable", svc_connections: int = 10, description: str | None = None) -> None:
        self.admin_url = admin_url
        parts = urlsplit(admin_url)
        self.public_host = public_host or parts.hostname or "127.0.0.1"
        self.public_port = public_port or parts.port or 5432
        self.sslmode = sslmode
        self.svc_connections = svc_connections
        self.description = description or f"PostgreSQL on {self.public_host}:{self.public_port}"
        self._pool: asyncpg.Pool | None = None
        self.sessions = ProjectSessions()
        # (Per node, so per process: the rest wait their turn.)
        self._heavy = asyncio.Semaphore(HEAVY_AT_ONCE)
        # restore_passwords(): per role, the last verifier found to be svc's password (only a
        # changed one costs a PBKDF2 again); False once pg_authid proved unreadable here.
        self._verified: dict[str, str] = {}
        self._authid_readable = True

    @staticmethod
    def names(project_id: str) -> tuple[str, str]:
        name = "p_" + hashlib.sha256(project_id.encode()).hexdigest()[:24]
        return name, name

    def endpoint(self, project_id: str) -> DatabaseEndpoint:
        return DatabaseEndpoint(host=self.public_host, port=self.public_port, database=self.names(project_id)[0],
                                sslmode=self.sslmode)

    async def ready(self) -> None:
        """Before the node's first use: nothing here (a private cluster starts: PrivateNode)."""

    @contextlib.asynccontextmanager
    async def _admin(self, doing: str) -> AsyncIterator[asyncpg.Connection]:
        """An administrator's connection from a small pool (a new one costs a SCRAM handshake);
        what the cluster refuses while `doing` is a DatabaseNodeError saying so."""
        await self.ready()
        try:
            if self._pool is None:
                self._pool = await asyncpg.create_pool(self.admin_url, min_size=0, max_size=4, timeout=10)
            con = await self._pool.acquire(timeout=10)
        except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
            raise DatabaseNodeError(f"the database node did not answer: {exc}") from None
        try:
            yield con
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise DatabaseNodeError(f"{doing} failed: {exc}") from None
        finally:
            await self._pool.release(con)

    @staticmethod
    async def _defaults(con: asyncpg.Connection, role: str, limits: ProjectLimits) -> None:
        """The plan's bounds as the role's defaults (the watchdog holds them whatever a session sets)."""
        await con.execute(f"ALTER ROLE {ident(role)} SET statement_timeout = {int(limits.statement_seconds) * 1000}")
        await con.execute(f"ALTER ROLE {ident(role)} SET idle_in_transaction_session_timeout = "
                          f"{int(limits.idle_transaction_seconds) * 1000}")

    async def provision(self, project_id: str, verifier: str, limits: ProjectLimits) -> DatabaseEndpoint:
        database, role = self.names(project_id)
        async with self._admin("provisioning the database") as con:
            async with con.transaction():
                await ceilings.lock(con)
                now = await ceilings.held(con, role)
                share = ceilings.role_share(limits, now)
                await ceilings.check_room(con, now, share + sum(now.tokens.values()), self.svc_connections)
                options = f"LOGIN {ROLE_OPTIONS} CONNECTION LIMIT {share} PASSWORD {literal(verifier)}"
                await con.execute(f"{'CREATE' if now.role is None else 'ALTER'} ROLE {ident(role)} WITH {options}")
                await self._defaults(con, role, limits)
            if not await con.fetchval("select 1 from pg_database where datname = $1", database):
                # (Not in a transaction: CREATE DATABASE cannot run in one.)
                await con.execute(f"CREATE DATABASE {ident(database)} OWNER {ident(role)} TEMPLATE template0 "
                                  "ENCODING 'UTF8'")
            await con.execute(f"REVOKE ALL ON DATABASE {ident(database)} FROM PUBLIC; "
                              f"GRANT CONNECT, TEMPORARY ON DATABASE {ident(database)} TO {ident(role)}")
        return self.endpoint(project_id)

    async def add_login(self, project_id: str, user: str, verifier: str, valid_until: datetime | None,
                        limits: ProjectLimits) -> None:
        _, role = self.names(project_id)
        until = f" VALID UNTIL {literal(valid_until.isoformat())}" if valid_until is not None else ""
        async with self._admin("creating the token user") as con, con.transaction():
            await ceilings.lock(con)
            now = await ceilings.held(con, role)
            left = await ceilings.token_share(con, role, limits, now)
            await ceilings.check_room(con, now, limits.connections, self.svc_connections)
            await con.execute(f"ALTER ROLE {ident(role)} CONNECTION LIMIT {left}")
            await con.execute(f"CREATE ROLE {ident(user)} WITH LOGIN {ROLE_OPTIONS} INHERIT "
                              f"CONNECTION LIMIT {int(limits.token_connections)} PASSWORD {literal(verifier)}"
                              f"{until} IN ROLE {ident(role)}")
            await con.execute(f"ALTER ROLE {ident(user)} SET role = {literal(role)}")
            await self._defaults(con, user, limits)

    async def drop_login(self, project_id: str, user: str) -> None:
        _, role = self.names(project_id)
        async with self._admin("dropping the token user") as con:
            await self._drop_login(con, role, user)

    @staticmethod
    async def _drop_login(con: asyncpg.Connection, role: str, user: str) -> None:
        async with con.transaction():
            await ceilings.lock(con)
            now = await ceilings.held(con, role)
            # By its oid: once the role is gone its sessions no longer show its name.
            oid = await con.fetchval("select oid from pg_roles where rolname = $1", user)
            await con.execute(f"DROP ROLE IF EXISTS {ident(user)}")
            if user in now.tokens and now.role is not None:  # its connections go back to the role
                await con.execute(f"ALTER ROLE {ident(role)} CONNECTION LIMIT {now.role + now.tokens[user]}")
        if oid is not None:
            await con.execute("select pg_terminate_backend(pid) from pg_stat_activity where usesysid = $1", oid)

    async def watch(self, limits: dict[str, ProjectLimits], default: ProjectLimits) -> Watched:
        roles = {self.names(p)[1]: each for p, each in limits.items()}
        async with self._admin("watching the projects' sessions") as con:
            acted = await con.fetch(WATCH, list(roles), [float(r.statement_seconds) for r in roles.values()],
                                    [float(r.idle_transaction_seconds) for r in roles.values()],
                                    float(default.statement_seconds), float(default.idle_transaction_seconds),
                                    ceilings.PROJECT_ROLES)
            expired = [r[0] for r in await con.fetch(
                "select rolname from pg_roles where rolname ~ $1 and rolvaliduntil < now()", ceilings.TOKEN_USERS)]
            for user in expired:
                await self._drop_login(con, user[:ceilings.ROLE_LENGTH], user)
            shrunk = await ceilings.fit(con, roles)
        return Watched(cancelled=[r[0] for r in acted if r[1] == "cancel"],
                       ended=[r[0] for r in acted if r[1] == "end"], dropped=expired, shrunk=shrunk)

    async def restore_passwords(self, passwords: dict[str, str]) -> list[str]:
        # A role may change its own password (PostgreSQL 15 has no way to forbid it), and a token
        # user's session runs as the project's role: without this, a token of 30 minutes could
        # set a password of its own and keep the role for good (and env.db would be locked out).
        if not self._authid_readable:
            return []
        projects = {self.names(p)[1]: p for p in passwords}
        async with self._admin("checking the projects' passwords") as con:
            try:
                found: dict[str, str | None] = dict(await con.fetch(
                    "select rolname, rolpassword from pg_authid where rolname = any($1::text[])", list(projects)))
            except asyncpg.InsufficientPrivilegeError:
                self._authid_readable = False
                log.warning("project databases: the administrator cannot read pg_authid (not a superuser), so "
                            "the watchdog cannot check that each project's role keeps svc's password")
                return []
            self._verified = {r: v for r, v in self._verified.items() if found.get(r) == v}
            changed = [r for r in found if r not in self._verified]

            def check() -> list[bool]:
                return [scram.matches(found[r], passwords[projects[r]]) for r in changed]

            restored = []
            for role, good in zip(changed, await asyncio.to_thread(check) if changed else [], strict=True):
                if good:
                    self._verified[role] = str(found[role])
                    continue
                verifier = scram.verifier(passwords[projects[role]])
                await con.execute(f"ALTER ROLE {ident(role)} PASSWORD {literal(verifier)}")
                # Whoever logged in with the other password; env.db's pool too (it opens again).
                await con.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = $1", role)
                await self.sessions.forget(projects[role])
                self._verified[role] = verifier
                restored.append(projects[role])
        return restored

    def warm(self, project_id: str) -> bool:
        return self.sessions.warm(project_id)

    async def query(self, project_id: str, password: str | None, sql: str, params: Sequence[Any],
                    tx: str | None = None) -> QueryResult:
        await self.ready()
        return await self.sessions.query(project_id, self.names(project_id)[1], password, self.endpoint(project_id),
                                         sql, params, tx)

    async def begin(self, project_id: str, password: str | None) -> str:
        await self.ready()
        return await self.sessions.begin(project_id, self.names(project_id)[1], password, self.endpoint(project_id))

    async def finish(self, project_id: str, tx: str, *, commit: bool) -> None:
        await self.sessions.finish(project_id, tx, commit=commit)

    async def drop(self, project_id: str) -> None:
        await self.sessions.forget(project_id)
        database, role = self.names(project_id)
        async with self._admin("dropping the database") as con:
            members = [r["rolname"] for r in await con.fetch(
                "select m.rolname from pg_auth_members a join pg_roles m on m.oid = a.member "
                "join pg_roles r on r.oid = a.roleid where r.rolname = $1", role)]
            await con.execute(f"DROP DATABASE IF EXISTS {ident(database)} WITH (FORCE)")
            for user in [*members, role]:
                await con.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = $1",
                                  user)
                await con.execute(f"DROP ROLE IF EXISTS {ident(user)}")

    async def tunnel(self, project_id: str, password: str, receive: Callable[[], Awaitable[bytes]],
                     send: Callable[[bytes], Awaitable[None]]) -> None:
        await self.ready()
        try:
            await proxy.serve(receive, send, self.endpoint(project_id), self.names(project_id)[1], password)
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise DatabaseNodeError(f"the tunnel to the database failed: {exc}") from None
        except proxy.ProxyError:
            return  # the client broke the protocol or went away: nothing to tell anyone

    # --- generations (backups.py) ---

    async def change_markers(self, project_ids: Sequence[str]) -> dict[str, str]:
        wanted = {self.names(p)[0]: p for p in project_ids}
        async with self._admin("reading the databases' counters") as con:
            rows = await con.fetch(
                "select datname, tup_inserted, tup_updated, tup_deleted, coalesce(stats_reset::text, '') "
                "from pg_stat_database where datname = any($1::text[])", list(wanted))
        return {wanted[r[0]]: f"{r[1]}:{r[2]}:{r[3]}:{r[4]}" for r in rows}

    async def dump(self, project_id: str, dest: Path) -> dict[str, int]:
        await self.ready()
        async with self._heavy:
            return await backups.dump(self.admin_url, self.names(project_id)[0], dest)

    async def _fresh(self, con: asyncpg.Connection, database: str, role: str) -> None:
        """An empty database owned by the role, which no one may connect to yet."""
        await con.execute(f"DROP DATABASE IF EXISTS {ident(database)} WITH (FORCE)")
        await con.execute(f"CREATE DATABASE {ident(database)} OWNER {ident(role)} TEMPLATE template0 ENCODING 'UTF8'")
        await con.execute(f"REVOKE ALL ON DATABASE {ident(database)} FROM PUBLIC; "
                          f"REVOKE ALL ON DATABASE {ident(database)} FROM {ident(role)}")

    async def verify(self, project_id: str, source: Path) -> tuple[dict[str, int], float]:
        database, role = self.names(project_id)
        scratch = f"{database}_v{secrets.token_hex(4)}"
        # The turn first: no administrator's connection is held while waiting for it.
        async with self._heavy, self._admin("making the scratch database") as con:
            await self._fresh(con, scratch, role)
            try:
                return await backups.restore_and_count(self.admin_url, scratch, role, source)
            finally:
                with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                    await con.execute(f"DROP DATABASE IF EXISTS {ident(scratch)} WITH (FORCE)")

    async def drain(self, project_id: str) -> None:
        database, role = self.names(project_id)
        await self.sessions.forget(project_id)
        async with self._admin("draining the database") as con:
            if await con.fetchval("select 1 from pg_database where datname = $1", database):
                await con.execute(f"REVOKE CONNECT, TEMPORARY ON DATABASE {ident(database)} FROM {ident(role)}")
            # The project's sessions (its role's, its token users'), not the administrator's own.
            await con.execute("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 "
                              "and usename <> current_user", database)

    async def replace(self, project_id: str, source: Path) -> None:
        database, role = self.names(project_id)
        async with self._admin("replacing the database") as con:
            await self._fresh(con, database, role)
        async with self._heavy:
            await backups.restore(self.admin_url, database, role, source)

    async def reopen(self, project_id: str) -> None:
        database, role = self.names(project_id)
        async with self._admin("reopening the database") as con:
            await con.execute(f"GRANT CONNECT, TEMPORARY ON DATABASE {ident(database)} TO {ident(role)}")

    async def close(self) -> None:
        await self.sessions.close()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
