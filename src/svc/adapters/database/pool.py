"""A project role's connections for env.db: at most `size`, kept open between queries, each
keeping its prepared statements by SQL text (a Parse and Describe round trip saved on every later
call of the same statement: a third of a short query's time).

Why not asyncpg's Pool: it hands out proxies whose prepared statements die with each release, so
a statement could not outlive one query; and it sends a reset query on every release (RESET ALL,
UNLISTEN, CLOSE ALL: another round trip). Here, as with node-postgres's pool, what a project's SQL
sets for its session stays on that connection, which only that project's role ever uses; an open
transaction is rolled back before a connection is given to the next query."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

STATEMENTS_KEPT = 100  # per connection; the least recently used one goes


class ProjectConnection(asyncpg.Connection):  # type: ignore[misc]
    """asyncpg's connection, with its kept statements and when it was last given back."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statements: OrderedDict[str, Any] = OrderedDict()
        self.last_used = time.monotonic()

    async def prepared(self, sql: str) -> Any:
        statement = self.statements.get(sql)
        if statement is not None:
            self.statements.move_to_end(sql)
            return statement
        statement = await self.prepare(sql)
        self.statements[sql] = statement
        if len(self.statements) > STATEMENTS_KEPT:
            self.statements.popitem(last=False)
        return statement

    def forget(self, sql: str) -> None:
        """A kept statement whose tables changed under it (DDL since): prepared again next time."""
        self.statements.pop(sql, None)


class RolePool:
    def __init__(self, connect: Callable[[], Awaitable[ProjectConnection]], size: int, idle_seconds: float) -> None:
        self.connect = connect
        self.size = size
        self.idle_seconds = idle_seconds
        self.idle: list[ProjectConnection] = []
        self.all: set[ProjectConnection] = set()
        self.freed = asyncio.Condition()

    async def acquire(self) -> ProjectConnection:
        """An idle connection, a new one while under `size`, else the next one given back (the
        caller bounds the wait)."""
        while True:
            while self.idle:
                con = self.idle.pop()
                if not con.is_closed():
                    return con
                self.all.discard(con)
            if len(self.all) < self.size:
                con = await self.connect()
                self.all.add(con)
                return con
            async with self.freed:
                await self.freed.wait()

    async def release(self, con: ProjectConnection) -> None:
        if not con.is_closed() and con.is_in_transaction():
            try:
                await con.execute("ROLLBACK")
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                con.terminate()
        if con.is_closed():
            self.all.discard(con)
        else:
            con.last_used = time.monotonic()
            self.idle.append(con)
        async with self.freed:
            self.freed.notify()

    async def sweep(self) -> None:
        """Close the connections unused for `idle_seconds`."""
        cutoff = time.monotonic() - self.idle_seconds
        stale = [c for c in self.idle if c.last_used < cutoff]
        for con in stale:
            self.idle.remove(con)
            self.all.discard(con)
            con.terminate()

    def terminate(self) -> None:
        for con in self.all:
            con.terminate()
        self.all.clear()
        self.idle.clear()
