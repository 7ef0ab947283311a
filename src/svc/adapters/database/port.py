"""The database node port: what svc needs of the PostgreSQL cluster that holds the projects'
databases (docs/database.md). One database and one login role per project, named by the project's
id; the role reaches its own database only. Passwords reach PostgreSQL only as SCRAM verifiers
(kit/scram.py), so the cluster never sees one in clear."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class DatabaseEndpoint:
    """Where a client connects: the cluster's address as clients reach it, and the database."""

    host: str
    port: int
    database: str
    sslmode: str


class DatabaseNodeError(Exception):
    """The cluster refused or did not answer; the message says what svc was doing."""


class CeilingReached(DatabaseNodeError):
    """A new role would oversubscribe: the project's own ceiling (`connection_ceiling`) or the
    cluster's budget for all projects (`node_full`); the message says which and by how much."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ProjectLimits:
    """What a project's plan lets its database hold (domains/orgs/plans.py): `connections` is its
    ceiling, which its role's and its token users' CONNECTION LIMITs sum to (env.db's pool and the
    tunnel log in as the role, so they count in it); each token user holds `token_connections` of
    it. The seconds are the role's defaults and the watchdog's bounds (watch())."""

    connections: int
    token_connections: int
    statement_seconds: int
    idle_transaction_seconds: int


@dataclass(frozen=True)
class Watched:
    """What one watchdog turn did: backends cancelled or ended, expired token users dropped, the
    projects' roles whose connections were shrunk to their plan's ceiling."""

    cancelled: list[int]
    ended: list[int]
    dropped: list[str]
    shrunk: list[str]


@dataclass(frozen=True)
class QueryResult:
    """What a statement sent through env.db gave: column names, rows as lists of JSON values, the
    count of rows it touched (None where PostgreSQL says none) and its command tag's verb."""

    fields: list[str]
    rows: list[list[Any]]
    row_count: int | None
    command: str


class SqlError(Exception):
    """PostgreSQL refused a project's statement: its SQLSTATE and message, for the project."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ColdSession(Exception):
    """The project has no open connections in this process: its password is needed to open them."""


class DatabaseNode(Protocol):
    description: str  # for the banner: "PostgreSQL 15.10 (private cluster on 127.0.0.1:5433)"

    def names(self, project_id: str) -> tuple[str, str]:
        """(database, role) of a project."""
        ...

    def endpoint(self, project_id: str) -> DatabaseEndpoint: ...

    async def provision(self, project_id: str, verifier: str, limits: ProjectLimits) -> DatabaseEndpoint:
        """The project's role (login with this SCRAM verifier, no other rights, its share of
        `limits.connections`) and its database (owned by the role, closed to every other role).
        Idempotent: a repeat sets the verifier again and creates what is missing.
        CeilingReached (node_full): the cluster has no room for another ceiling."""
        ...

    async def add_login(self, project_id: str, user: str, verifier: str, valid_until: datetime | None,
                        limits: ProjectLimits) -> None:
        """A token user: logs in with its own password and acts as the project's role; its
        connections are taken from the role's. CeilingReached: no room for them."""
        ...

    async def drop_login(self, project_id: str, user: str) -> None:
        """The token user is gone: its next connection is refused, its open ones are ended, its
        connections go back to the project's role."""
        ...

    async def watch(self, limits: dict[str, ProjectLimits], default: ProjectLimits) -> Watched:
        """One watchdog turn over the projects' sessions (keyed by project id; `default` for a
        role of a project not named): cancel a statement past its bound, end a transaction idle
        past its bound, end the sessions of expired token users and drop them, and shrink what a
        project holds to its ceiling where it holds more (a downgrade)."""
        ...

    async def restore_passwords(self, passwords: dict[str, str]) -> list[str]:
        """The watchdog's check of the projects' roles (keyed by project id: svc's password of
        each): a role whose password on the node is not svc's any more (a role may change its own,
        and a token user's session acts as the role) gets svc's again and its sessions are ended.
        The projects set back; none when the node cannot show the roles' verifiers (an external
        cluster whose administrator is not a superuser: said once in the log)."""
        ...

    async def drop(self, project_id: str) -> None:
        """The project's database, its role and its token users (connections ended first)."""
        ...

    def warm(self, project_id: str) -> bool:
        """Whether the project's connections are open here (a query needs no password then)."""
        ...

    async def query(self, project_id: str, password: str | None, sql: str, params: Sequence[Any],
                    tx: str | None = None) -> QueryResult:
        """Run one statement as the project's role (in the open transaction `tx`, when given).
        SqlError: PostgreSQL refused it. ColdSession: no password given and none open here."""
        ...

    async def begin(self, project_id: str, password: str | None) -> str:
        """Open a transaction on one of the role's connections, held until finish() or a time limit."""
        ...

    async def finish(self, project_id: str, tx: str, *, commit: bool) -> None: ...

    async def tunnel(self, project_id: str, password: str, receive: Callable[[], Awaitable[bytes]],
                     send: Callable[[bytes], Awaitable[None]]) -> None:
        """One PostgreSQL client connection through the port-forward path (proxy.py), logged in
        as the project's role by svc: `receive` gives the client's bytes (b"" once it is gone),
        `send` takes the node's."""
        ...

    # --- generations (docs/database.md, "Generations") ---

    async def change_markers(self, project_ids: Sequence[str]) -> dict[str, str]:
        """For each project whose database exists: a text that changes when its content does
        (one query for all of them)."""
        ...

    async def dump(self, project_id: str, dest: Path) -> dict[str, int]:
        """pg_dump's custom format into `dest`; the rows per table of the snapshot it dumped."""
        ...

    async def verify(self, project_id: str, source: Path) -> tuple[dict[str, int], float]:
        """Restore `source` into a scratch database (dropped after): its rows per table and the
        restore's seconds. DatabaseNodeError: it did not restore."""
        ...

    async def drain(self, project_id: str) -> None:
        """Refuse new connections to the project's database and end the open ones."""
        ...

    async def replace(self, project_id: str, source: Path) -> None:
        """The database's content becomes exactly `source`'s (it stays closed: reopen())."""
        ...

    async def reopen(self, project_id: str) -> None:
        """The project's role (and its token users) may connect again."""
        ...

    async def close(self) -> None: ...
