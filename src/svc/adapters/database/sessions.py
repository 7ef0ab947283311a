"""SQL sent by a project's worker through `env.db`, run on the node as the project's own role
(docs/database.md, "env.db"). svc holds a small pool of the role's connections per project
(created at the first query, closed when idle), so the worker never holds a password or a
connection, and a thousand isolates of one project share at most `POOL_SIZE` connections of
its connection limit.

Values cross as JSON, the way node-postgres gives them to JavaScript: dates, times, numerics,
uuids, intervals and network types travel in PostgreSQL's text form both ways (PostgreSQL parses
a parameter's text, so `'2026-01-01'` binds to a date); json and jsonb as their value; bytea as
`\\x...` hex; an integer outside JavaScript's safe range as text. A failing statement gives the
worker PostgreSQL's SQLSTATE and message, nothing of svc's.

An interactive transaction holds one connection between requests of the same worker
invocation; it is rolled back and the connection freed when it is not finished within
`TRANSACTION_SECONDS`."""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from svc.adapters.database.pool import ProjectConnection, RolePool
from svc.adapters.database.port import ColdSession, DatabaseEndpoint, DatabaseNodeError, QueryResult, SqlError

POOL_SIZE = 5
POOLS_KEPT = 500  # projects with a pool at once; the least recently used one is closed past it
IDLE_SECONDS = 60.0  # a pooled connection unused this long is closed
TRANSACTION_SECONDS = 30.0
ACQUIRE_SECONDS = 10.0  # for a connection of the pool (a new one connects within this too)
MAX_ROWS = 10_000  # rows one query may return to a worker (a bound on svc's memory per query)
SAFE_INTEGER = 2**53 - 1

# Sent and received in PostgreSQL's text form (JavaScript has no type of its own for them).
TEXT_TYPES = ("date", "time", "timetz", "timestamp", "timestamptz", "interval", "numeric", "uuid", "inet",
              "cidr", "macaddr", "macaddr8", "money", "bytea", "tsvector", "tsquery", "xml", "bit", "varbit")
TEXT_LIKE = frozenset({"text", "varchar", "bpchar", "name", "char", "citext"})
INTEGERS = frozenset({"int2", "int4", "int8", "oid"})
# How PostgreSQL names them in its messages.
SQL_NAMES = {"int2": "smallint", "int4": "integer", "int8": "bigint", "oid": "oid", "float4": "real",
             "float8": "double precision"}


def _json_out(value: Any) -> Any:
    return value if isinstance(value, str) else json.dumps(value)


async def _codecs(con: asyncpg.Connection) -> None:
    for name in TEXT_TYPES:
        await con.set_type_codec(name, schema="pg_catalog", encoder=str, decoder=str, format="text")
    for name in ("json", "jsonb"):
        await con.set_type_codec(name, schema="pg_catalog", encoder=_json_out, decoder=json.loads, format="text")


def _value(value: Any) -> Any:
    """A result value as JSON can carry it to JavaScript."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -SAFE_INTEGER <= value <= SAFE_INTEGER else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple, asyncpg.Record)):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    return str(value)


def _param(value: Any, type_name: str) -> Any:
    """A JSON parameter as asyncpg binds it to the statement's parameter type: JavaScript's
    loose types meet PostgreSQL's strict ones the way node-postgres sends them (as text)."""
    if value is None:
        return None
    if type_name in TEXT_LIKE and not isinstance(value, str):
        if isinstance(value, bool):
            return "true" if value else "false"
        return json.dumps(value) if isinstance(value, (dict, list)) else str(value)
    if type_name in INTEGERS and isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise SqlError("22P02", f'invalid input syntax for type {SQL_NAMES[type_name]}: "{value}"') from None
    if type_name in INTEGERS and isinstance(value, float) and value.is_integer():
        return int(value)
    if type_name in ("float4", "float8") and isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            raise SqlError("22P02", f'invalid input syntax for type {SQL_NAMES[type_name]}: "{value}"') from None
    if type_name in TEXT_TYPES and not isinstance(value, str):
        return str(value)
    return value


def _sql_error(exc: Exception) -> SqlError:
    if isinstance(exc, asyncpg.PostgresError):
        return SqlError(exc.sqlstate or "XX000", str(exc.args[0]) if exc.args else type(exc).__name__)
    # asyncpg's own refusal of a parameter before it reaches PostgreSQL (a text for an integer).
    return SqlError("22023", str(exc))


def _count(status: str | None) -> int | None:
    last = (status or "").rpartition(" ")[2]
    return int(last) if last.isdigit() else None


@dataclass
class _Transaction:
    project_id: str
    con: ProjectConnection
    pool: RolePool
    tx: Any
    timer: asyncio.TimerHandle | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ProjectSessions:
    """The projects' connections for env.db, on one cluster (its endpoint per project)."""

    def __init__(self) -> None:
        self._pools: OrderedDict[str, RolePool] = OrderedDict()
        self._swept = time.monotonic()
        self._opening: dict[str, asyncio.Lock] = {}
        self._transactions: dict[str, _Transaction] = {}

    def warm(self, project_id: str) -> bool:
        """Whether the project's pool is open here (its queries need no password)."""
        return project_id in self._pools

    async def _pool(self, project_id: str, role: str, password: str | None, endpoint: DatabaseEndpoint) -> RolePool:
        if time.monotonic() - self._swept > IDLE_SECONDS / 4:
            self._swept = time.monotonic()
            for each in list(self._pools.values()):
                await each.sweep()
        pool = self._pools.get(project_id)
        if pool is not None:
            self._pools.move_to_end(project_id)
            return pool
        if password is None:
            raise ColdSession(project_id)
        async with self._opening.setdefault(project_id, asyncio.Lock()):
            pool = self._pools.get(project_id)
            if pool is None:
                async def connect() -> ProjectConnection:
                    con: ProjectConnection = await asyncpg.connect(
                        host=endpoint.host, port=endpoint.port, database=endpoint.database, user=role,
                        password=password, timeout=10, connection_class=ProjectConnection)
                    await _codecs(con)
                    return con

                pool = RolePool(connect, POOL_SIZE, IDLE_SECONDS)
                self._pools[project_id] = pool
                while len(self._pools) > POOLS_KEPT:
                    _, old = self._pools.popitem(last=False)
                    old.terminate()
            return pool

    async def _acquire(self, project_id: str, role: str, password: str | None,
                       endpoint: DatabaseEndpoint) -> tuple[RolePool, ProjectConnection]:
        """A connection of the project's pool (the caller releases it to the pool), within
        ACQUIRE_SECONDS; PostgreSQL's refusal (a wrong password, too many connections) as the
        worker's SqlError, a node that does not answer as DatabaseNodeError."""
        try:
            pool = await self._pool(project_id, role, password, endpoint)
            async with asyncio.timeout(ACQUIRE_SECONDS):
                return pool, await pool.acquire()
        except asyncpg.PostgresError as exc:
            raise _sql_error(exc) from None
        except (OSError, TimeoutError, asyncpg.InterfaceError) as exc:
            raise DatabaseNodeError(f"the database node did not answer: {exc}") from None

    async def query(self, project_id: str, role: str, password: str | None, endpoint: DatabaseEndpoint, sql: str,
                    params: Sequence[Any], tx: str | None) -> QueryResult:
        if tx is not None:
            held = self._held(project_id, tx)
            async with held.lock:
                return await self._run(held.con, sql, params)
        pool, con = await self._acquire(project_id, role, password, endpoint)
        try:
            return await self._run(con, sql, params)
        finally:
            await pool.release(con)

    async def _run(self, con: ProjectConnection, sql: str, params: Sequence[Any]) -> QueryResult:
        try:
            try:
                statement = await con.prepared(sql)
            except asyncpg.PostgresSyntaxError as exc:
                # Several statements in one string (a schema script) cannot be prepared; without
                # parameters they run as one simple query, as psql would run them.
                if params or "multiple commands" not in str(exc):
                    raise
                status = await con.execute(sql)
                return QueryResult(fields=[], rows=[], row_count=_count(status), command=status.split(" ")[0])
            types = [t.name for t in statement.get_parameters()]
            if len(params) != len(types):
                raise SqlError("08P01", f"the statement takes {len(types)} parameters, {len(params)} were given")
            bound = [_param(v, t) for v, t in zip(params, types, strict=True)]
            fields = [a.name for a in statement.get_attributes()]
            try:
                rows = await statement.fetch(*bound)
            except (asyncpg.InvalidCachedStatementError, asyncpg.FeatureNotSupportedError):
                # The table under a kept statement changed (DDL since): prepare it again, once.
                con.forget(sql)
                statement = await con.prepared(sql)
                rows = await statement.fetch(*bound)
            if len(rows) > MAX_ROWS:
                raise SqlError("54000", f"the query returned {len(rows)} rows; env.db returns at most {MAX_ROWS} "
                                        "(add a LIMIT)")
            status = statement.get_statusmsg()
            return QueryResult(fields=fields, rows=[[_value(v) for v in row] for row in rows],
                               row_count=_count(status), command=(status or "").split(" ")[0])
        except SqlError:
            raise
        except (asyncpg.PostgresError, asyncpg.DataError, ValueError, TypeError, OverflowError) as exc:
            raise _sql_error(exc) from None
        except (OSError, asyncpg.InterfaceError) as exc:
            raise DatabaseNodeError(f"the database connection failed: {exc}") from None

    async def begin(self, project_id: str, role: str, password: str | None, endpoint: DatabaseEndpoint) -> str:
        pool, con = await self._acquire(project_id, role, password, endpoint)
        tx = con.transaction()
        try:
            await tx.start()
        except asyncpg.PostgresError as exc:
            await pool.release(con)
            raise _sql_error(exc) from None
        tx_id = secrets.token_urlsafe(18)
        held = _Transaction(project_id=project_id, con=con, pool=pool, tx=tx)
        held.timer = asyncio.get_running_loop().call_later(
            TRANSACTION_SECONDS, lambda: asyncio.ensure_future(self._expire(tx_id)))
        self._transactions[tx_id] = held
        return tx_id

    def _held(self, project_id: str, tx: str) -> _Transaction:
        held = self._transactions.get(tx)
        if held is None or held.project_id != project_id:
            raise SqlError("25P01", f"no transaction is open here (it ended, or ran over {TRANSACTION_SECONDS:.0f} s)")
        return held

    async def finish(self, project_id: str, tx: str, *, commit: bool) -> None:
        held = self._held(project_id, tx)
        self._transactions.pop(tx, None)
        if held.timer is not None:
            held.timer.cancel()
        async with held.lock:
            try:
                if commit:
                    await held.tx.commit()
                else:
                    await held.tx.rollback()
            except asyncpg.PostgresError as exc:
                raise _sql_error(exc) from None
            except (OSError, asyncpg.InterfaceError) as exc:
                raise DatabaseNodeError(f"the database connection failed: {exc}") from None
            finally:
                await held.pool.release(held.con)

    async def _expire(self, tx: str) -> None:
        held = self._transactions.get(tx)
        if held is not None:
            try:
                await self.finish(held.project_id, tx, commit=False)
            except (SqlError, DatabaseNodeError):
                pass

    async def forget(self, project_id: str) -> None:
        """Close the project's connections (its database is going away or changing under them)."""
        for tx, held in list(self._transactions.items()):
            if held.project_id == project_id:
                await self._expire(tx)
        pool = self._pools.pop(project_id, None)
        if pool is not None:
            pool.terminate()

    async def close(self) -> None:
        for tx in list(self._transactions):
            await self._expire(tx)
        for pool in self._pools.values():
            pool.terminate()
        self._pools.clear()
