"""Generations of a project's database on the node, with PostgreSQL's own tools (docs/database.md,
"Generations"): pg_dump's custom format out, pg_restore in, both run as the administrator.

- A dump runs inside a REPEATABLE READ transaction of the administrator's that exports its
  snapshot: pg_dump reads that very snapshot (`--snapshot`), and the rows of every table are counted
  in it too, so the counts are exactly the dump's (what verification compares a restore with).
- A restore goes into a database made fresh (owned by the project's role, closed to PUBLIC),
  as one transaction that stops at the first error (`--single-transaction --exit-on-error`), with
  `--role` set to the project's role: what it makes belongs to the project, whoever owned it
  before.
- The change check reads pg_stat_database's row counters (inserted, updated, deleted; catalog rows
  count, so DDL shows) for every database in one query: a database whose counters did not move
  since the last generation has not changed."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

import asyncpg

from svc.adapters.database.port import DatabaseNodeError
from svc.adapters.database.process import find_postgres

# A table's rows are counted in the dump's snapshot: user tables (plain and partitioned parents'
# children, not the parents themselves, which would count their rows twice).
TABLES = """
select quote_ident(n.nspname) || '.' || quote_ident(c.relname)
from pg_class c join pg_namespace n on n.oid = c.relnamespace
where c.relkind = 'r' and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'
  and n.nspname not like 'pg_temp%'
order by 1
"""

# How long a dump (its counts, then pg_dump) waits for a table's lock: a project holding one (LOCK
# TABLE in a transaction) fails that dump in words instead of holding one of svc's connections and
# a dump's turn for ever.
LOCK_WAIT = "60s"


def tool(name: str) -> str:
    """pg_dump or pg_restore: beside the server binary when there is one (the same major
    version as the private cluster), else on PATH."""
    server = find_postgres()
    if server is not None and (Path(server).parent / name).is_file():
        return str(Path(server).parent / name)
    found = shutil.which(name)
    if found is None:
        raise DatabaseNodeError(f"{name} is not installed (Debian: postgresql-client)")
    return found


def libpq_env(admin_url: str, database: str) -> dict[str, str]:
    """The administrator's connection for a libpq tool, through its environment (no password on a
    command line)."""
    parts = urlsplit(admin_url)
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", "PGHOST": parts.hostname or "127.0.0.1",
           "PGPORT": str(parts.port or 5432), "PGUSER": unquote(parts.username or "postgres"),
           "PGDATABASE": database, "PGCONNECT_TIMEOUT": "10"}
    if parts.password:
        env["PGPASSWORD"] = unquote(parts.password)
    return env


async def _run(args: list[str], env: Mapping[str, str], what: str) -> None:
    process = await asyncio.create_subprocess_exec(*args, env=dict(env), stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.DEVNULL,
                                                   stderr=asyncio.subprocess.PIPE)
    _, err = await process.communicate()
    if process.returncode != 0:
        said = err.decode(errors="replace").strip().splitlines()
        raise DatabaseNodeError(f"{what} failed: {' / '.join(said[-3:]) or f'exit {process.returncode}'}")


async def counts(con: asyncpg.Connection) -> dict[str, int]:
    """Rows per user table, as this connection's transaction sees them."""
    return {name: int(await con.fetchval(f"select count(*) from {name}"))  # noqa: S608 (quote_ident'ed)
            for name in [r[0] for r in await con.fetch(TABLES)]}


async def dump(admin_url: str, database: str, dest: Path) -> dict[str, int]:
    """pg_dump -Fc of `database` into `dest`; the rows per table of the very snapshot it dumped."""
    con = await asyncpg.connect(admin_url, database=database, timeout=10)
    try:
        async with con.transaction(isolation="repeatable_read", readonly=True):
            # The counts wait for a table's lock as pg_dump does, no longer.
            await con.execute(f"set local lock_timeout = '{LOCK_WAIT}'")
            snapshot = await con.fetchval("select pg_export_snapshot()")
            rows = await counts(con)
            await _run([tool("pg_dump"), "--format=custom", f"--snapshot={snapshot}", f"--file={dest}",
                        f"--lock-wait-timeout={LOCK_WAIT}", "--no-password"], libpq_env(admin_url, database),
                       "pg_dump")
    except (asyncpg.PostgresError, OSError) as exc:
        raise DatabaseNodeError(f"the dump failed: {exc}") from None
    finally:
        await con.close()
    return rows


async def restore(admin_url: str, database: str, role: str, source: Path) -> None:
    """pg_restore `source` into `database` (fresh), as one transaction, its objects the role's."""
    await _run([tool("pg_restore"), f"--dbname={database}", f"--role={role}", "--no-owner", "--single-transaction",
                "--exit-on-error", "--no-password", str(source)], libpq_env(admin_url, database), "pg_restore")


async def restore_and_count(admin_url: str, database: str, role: str, source: Path) -> tuple[dict[str, int], float]:
    """Restore into `database` (fresh); the rows per table it then holds, and the restore's seconds."""
    started = time.perf_counter()
    await restore(admin_url, database, role, source)
    seconds = time.perf_counter() - started
    try:
        con = await asyncpg.connect(admin_url, database=database, timeout=10)
    except (asyncpg.PostgresError, OSError) as exc:
        raise DatabaseNodeError(f"the restored database did not open: {exc}") from None
    try:
        return await counts(con), seconds
    finally:
        await con.close()
