"""Connection ceilings, held by PostgreSQL itself (docs/database.md, "Ceilings").

A project's connections share one ceiling from its plan (ProjectLimits.connections): its role's
CONNECTION LIMIT and its token users' sum to it, so no client can go past it, however many token
users it makes or whatever it sets; env.db's pool and the tunnel log in as the role and count in
its share. A token user's connections are taken from the role's and given back when it goes.

The sum over every project can never reach the cluster's own limit: the budget is
`max_connections` less the slots PostgreSQL keeps for superusers (`superuser_reserved_connections`,
and `reserved_connections` from PostgreSQL 16) and less svc's own reserve for its administrator's
pool, dumps and restores (SVC_PROJECT_DB_SVC_CONNECTIONS). A role that would take the sum past
the budget is refused (node_full), as is a token user that would leave the role nothing or fewer
connections than it holds open (connection_ceiling).

Every change runs in one transaction of the administrator's under a transaction-level advisory
lock, so two processes (or two requests) allocating at once see each other's roles."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from svc.adapters.database.port import CeilingReached, ProjectLimits

# pg_advisory_xact_lock's key for the allocation (any constant no other svc lock uses).
LOCK_KEY = 0x5356_4344_4243_4C47  # "SVCDBCLG"
# The roles svc makes: a project's (p_ and 24 hex digits) and its token users' (then _t and 12).
PROJECT_ROLES = r"^p_[0-9a-f]{24}(_t[0-9a-f]{12})?$"
TOKEN_USERS = r"^p_[0-9a-f]{24}_t[0-9a-f]{12}$"
ROLE_LENGTH = len("p_") + 24  # a token user's name starts with its project's role


@dataclass(frozen=True)
class Held:
    """A project's allocation as the cluster holds it now."""

    role: int | None  # the role's CONNECTION LIMIT; None: the role does not exist yet
    tokens: dict[str, int]  # its token users' limits

    @property
    def total(self) -> int:
        return (self.role or 0) + sum(self.tokens.values())


async def lock(con: asyncpg.Connection) -> None:
    """Inside the caller's transaction: the allocation is this transaction's until it ends."""
    await con.execute("select pg_advisory_xact_lock($1)", LOCK_KEY)


async def budget(con: asyncpg.Connection, svc_connections: int) -> int:
    """The connections the projects may hold between them on this cluster."""
    row = await con.fetchrow(
        "select current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int, "
        "coalesce(current_setting('reserved_connections', true), '0')::int")
    return int(row[0]) - int(row[1]) - int(row[2]) - svc_connections


async def allocated(con: asyncpg.Connection) -> int:
    """What every project's roles hold between them."""
    return int(await con.fetchval("select coalesce(sum(greatest(rolconnlimit, 0)), 0) from pg_roles "
                                  "where rolname ~ $1", PROJECT_ROLES))


async def held(con: asyncpg.Connection, role: str) -> Held:
    rows = await con.fetch("select rolname, rolconnlimit from pg_roles where rolname = $1 or "
                           "(starts_with(rolname, $1 || '_t') and rolname ~ $2)", role, PROJECT_ROLES)
    limits = {r[0]: int(r[1]) for r in rows}
    return Held(role=limits.pop(role, None), tokens=limits)


async def check_room(con: asyncpg.Connection, now: Held, after: int, svc_connections: int) -> None:
    """node_full when the project's total growing from `now` to `after` would pass the budget."""
    if after <= now.total:
        return
    room = await budget(con, svc_connections) - await allocated(con) + now.total
    if after > room:
        raise CeilingReached("node_full", f"the database node is full: a project's ceiling of {after} connections "
                                          f"does not fit in the {max(room, 0)} left for projects on it; "
                                          "ask the operator")


def role_share(limits: ProjectLimits, now: Held) -> int:
    """The role's limit when (re)provisioned: the ceiling less its token users' (at least one, so
    env.db keeps a connection after a downgrade left old token users holding more)."""
    return max(1, limits.connections - sum(now.tokens.values()))


async def token_share(con: asyncpg.Connection, role: str, limits: ProjectLimits, now: Held) -> int:
    """The role's limit once another token user holds its share; connection_ceiling when that
    leaves the role nothing, or less than it holds open (they would pass the ceiling together)."""
    tokens = sum(now.tokens.values()) + limits.token_connections
    left = limits.connections - tokens
    if left < 1:
        raise CeilingReached("connection_ceiling",
                             f"the project's ceiling is {limits.connections} connections and its token users hold "
                             f"{tokens - limits.token_connections} of them: delete one, or let it expire")
    open_now = int(await con.fetchval("select count(*) from pg_stat_activity where usename = $1", role))
    if open_now > left:
        raise CeilingReached("connection_ceiling",
                             f"the project's role has {open_now} connections open and another token user would "
                             f"leave it {left} of the project's ceiling of {limits.connections}: close some first")
    return left


async def fit(con: asyncpg.Connection, limits: dict[str, ProjectLimits]) -> list[str]:
    """Shrink what a project holds to its plan's ceiling where it holds more (a downgrade, or
    roles made before ceilings were): each token user to its share, the role to what is left
    (at least one). Only ever down, so the budget cannot be passed. Only the projects named (a
    role provisioned a moment before its project's row is written is not taken for a free one's).
    The roles changed."""
    rows = await con.fetch("select rolname, rolconnlimit from pg_roles where rolname ~ $1", PROJECT_ROLES)
    projects: dict[str, dict[str, int]] = {}
    for name, limit in rows:
        projects.setdefault(name[:ROLE_LENGTH], {})[name] = int(limit)
    over = []
    for role, held_now in projects.items():
        own = limits.get(role)
        if own is None:
            continue
        tokens = {n: v for n, v in held_now.items() if n != role}
        unbounded = any(v < 0 for v in held_now.values())
        if role in held_now and (unbounded or sum(held_now.values()) > own.connections
                                 or any(v > own.token_connections for v in tokens.values())):
            over.append(role)
    changed = []
    for role in over:
        async with con.transaction():
            await lock(con)
            now = await held(con, role)
            if now.role is None:
                continue
            own = limits[role]
            tokens = {n: own.token_connections if v < 0 else min(v, own.token_connections)
                      for n, v in now.tokens.items()}
            for name, value in tokens.items():
                if value != now.tokens[name]:
                    await con.execute(f'ALTER ROLE "{name}" CONNECTION LIMIT {value}')
            share = max(1, own.connections - sum(tokens.values()))
            if now.role < 0 or share < now.role:
                await con.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT {share}')
            changed.append(role)
    return changed
