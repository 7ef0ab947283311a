"""What keeps the credential cache (auth/cache.py) exact.

1. Every session of a Database is watched (SQLAlchemy session events): a transaction that wrote
   rows of the tables credentials, orgs and roles are resolved from (`WATCHED_TABLES`) clears the
   cache when it ends, after the commit. Caught: ORM objects of those tables in a flush, and
   insert()/update()/delete() statements against them run with `session.execute`; a textual
   statement that is not a SELECT counts as such a write (conservative). Writes to those tables
   must go through a session (never a bare engine connection, nor the legacy Session.bulk_*
   methods), which is how svc writes. A write
   made outside svc (psql, sqlite3) tells no cache: GETs may see the old state for up to the
   cache's max age; `NOTIFY svc_auth` (PostgreSQL) or a restart clears it.
2. PostgreSQL, several `svc serve` processes: the same transaction sends `NOTIFY svc_auth` just
   before it commits, so the notification is delivered if and only if the change committed. Each
   process LISTENs on a dedicated connection and clears its cache on every notification from
   another process. While that connection is down the cache is off (every request reads the
   store); when it is back, the cache starts empty, since notifications may have been missed.
   A change committed by another process is seen there once its notification arrives (a
   round trip of the state store's connection, typically well under a millisecond).
3. SQLite: one process per data directory, enforced by an exclusive lock on
   `SVC_DATA_DIR/svc.lock` taken at start (a second `svc serve` on the same directory refuses to
   start). Two apps in one process (tests) share the lock and clear each other's caches.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import ORMExecuteState, Session, SessionTransaction
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.elements import TextClause

from svc.auth.cache import AuthCache
from svc.settings import Settings

log = logging.getLogger("svc.auth")

WATCHED_TABLES = frozenset({"users", "user_sessions", "access_tokens", "memberships", "orgs", "personal_orgs"})
CHANNEL = "svc_auth"
LOCK_FILE = "svc.lock"

_CHANGED = "svc_auth_changed"  # session.info keys
_NOTIFIED = "svc_auth_notified"
_READ_TEXT = re.compile(r"\s*select\b", re.IGNORECASE)

LISTEN_WAIT_SECONDS = 10.0  # at start, for the LISTEN connection before serving with the cache off
PING_SECONDS = 10.0  # the LISTEN connection is checked this often (a silent network loss)
PING_TIMEOUT_SECONDS = 5.0
RETRY_SECONDS = (0.2, 5.0)  # reconnect delay: first, most


# --- 1. watching the sessions ----------------------------------------------------------------------

def _any_watched(objects: Iterable[object]) -> bool:
    return any(getattr(obj, "__tablename__", None) in WATCHED_TABLES for obj in objects)


def _pending(session: Session) -> Iterable[object]:
    return chain(session.new, session.dirty, session.deleted)


def _may_write_watched(state: ORMExecuteState) -> bool:
    if state.is_select:
        return False
    statement = state.statement
    if isinstance(statement, UpdateBase):
        name = getattr(getattr(statement, "table", None), "name", None)
        return name is None or name in WATCHED_TABLES
    if isinstance(statement, TextClause):
        return _READ_TEXT.match(statement.text) is None
    return True  # a statement of a kind not read here: assume it may


def watch_writes(session_class: type[Session], *, on_change: Callable[[], None], notify: str | None) -> None:
    """Call `on_change` when a transaction of a `session_class` session that wrote watched rows
    ends (after its commit; after a rollback too, harmlessly). With `notify` (PostgreSQL), such a
    transaction also sends NOTIFY svc_auth with that payload before it commits."""

    def mark(session: Session) -> None:
        session.info[_CHANGED] = True

    @event.listens_for(session_class, "after_flush")
    def _after_flush(session: Session, _flush_context: Any) -> None:
        if not session.info.get(_CHANGED) and _any_watched(_pending(session)):
            mark(session)

    @event.listens_for(session_class, "do_orm_execute")
    def _on_execute(state: ORMExecuteState) -> None:
        if not state.session.info.get(_CHANGED) and _may_write_watched(state):
            mark(state.session)

    if notify is not None:
        statement = f"NOTIFY {CHANNEL}, '{notify}'"  # notify is hex: nothing to quote

        @event.listens_for(session_class, "before_commit")
        def _before_commit(session: Session) -> None:
            if session.in_nested_transaction() or session.info.get(_NOTIFIED):
                return
            # The commit flushes what is still pending after this event.
            if session.info.get(_CHANGED) or _any_watched(_pending(session)):
                mark(session)
                session.connection().exec_driver_sql(statement)
                session.info[_NOTIFIED] = True

    @event.listens_for(session_class, "after_transaction_end")
    def _after_end(session: Session, transaction: SessionTransaction) -> None:
        if transaction.parent is not None:  # a savepoint: its writes count when the whole ends
            return
        session.info.pop(_NOTIFIED, None)
        if session.info.pop(_CHANGED, False):
            on_change()


# --- 3. SQLite: one process per data directory -----------------------------------------------------

class StoreInUse(RuntimeError):
    """Another process serves this SQLite store."""


@dataclass
class _Owner:
    fd: int
    caches: set[AuthCache] = field(default_factory=set)


# The process's claims on SQLite stores, by data directory: the one state svc keeps per process rather
# than per app (AppContext.state_of), because the lock is the process's (flock: a second claim from
# this process would be refused like another process's). Apps of this process on one store share its
# claim and clear each other's caches; apps on other stores share nothing (tests/auth/test_cache.py).
_owners: dict[Path, _Owner] = {}
_owners_lock = threading.Lock()


def _lock(data_dir: Path) -> int:
    """The data directory's lock, taken (its file descriptor); StoreInUse when another process has it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise StoreInUse(
            f"Another svc process (pid {holder}) is using the SQLite store in {data_dir} "
            f"(it holds {path}). With SQLite, one svc process serves a data directory: stop "
            "the other one, or use PostgreSQL (SVC_DATABASE_URL) to run several.") from None
    return fd


def check_store_free(data_dir: Path) -> None:
    """StoreInUse when another process serves this SQLite data directory: checked by `svc serve`
    before it says anything, so a second one stops with that line alone (the start claims it again)."""
    with _owners_lock:
        if data_dir in _owners:
            return
        os.close(_lock(data_dir))


def _claim(data_dir: Path, cache: AuthCache) -> None:
    with _owners_lock:
        owner = _owners.get(data_dir)
        if owner is None:
            fd = _lock(data_dir)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            owner = _owners[data_dir] = _Owner(fd)
        owner.caches.add(cache)


def _release(data_dir: Path, cache: AuthCache) -> None:
    with _owners_lock:
        owner = _owners.get(data_dir)
        if owner is None:
            return
        owner.caches.discard(cache)
        if not owner.caches:
            del _owners[data_dir]
            os.close(owner.fd)  # releases the lock


def _caches_of(data_dir: Path) -> list[AuthCache]:
    with _owners_lock:
        owner = _owners.get(data_dir)
        return list(owner.caches) if owner else []


# --- 2. PostgreSQL: LISTEN --------------------------------------------------------------------------

class _Listener:
    def __init__(self, dsn: str, cache: AuthCache, instance_id: str) -> None:
        self._dsn = dsn
        self._cache = cache
        self._instance_id = instance_id
        self._up = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.server_pid: int | None = None  # of the LISTEN connection's backend (tests end it)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="svc-auth-listen")
        try:
            await asyncio.wait_for(self._up.wait(), LISTEN_WAIT_SECONDS)
        except TimeoutError:
            log.warning("credential cache off: cannot LISTEN on the state store yet; retrying")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload != self._instance_id:  # this process cleared its cache when it committed
            self._cache.clear()

    async def _run(self) -> None:
        delay = RETRY_SECONDS[0]
        while True:
            try:
                await self._listen_once()
                log.warning("credential cache off: the LISTEN connection to the state store was lost")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("credential cache off: LISTEN on the state store failed (%s); retrying",
                            type(exc).__name__)
            finally:
                self._cache.disable()
                if self._up.is_set():  # it was up: retry soon again
                    delay = RETRY_SECONDS[0]
                self._up.clear()
                self.server_pid = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_SECONDS[1])

    async def _listen_once(self) -> None:
        """Connect, LISTEN, turn the cache on; return when the connection is lost."""
        lost = asyncio.Event()

        def on_lost(_conn: Any) -> None:
            self._cache.disable()
            lost.set()

        conn = await asyncpg.connect(self._dsn, timeout=LISTEN_WAIT_SECONDS)
        try:
            conn.add_termination_listener(on_lost)
            await conn.add_listener(CHANNEL, self._notified)
            self.server_pid = conn.get_server_pid()
            self._cache.enable()
            self._up.set()
            while not lost.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), PING_SECONDS)
                    return
                await asyncio.wait_for(conn.fetchval("SELECT 1"), PING_TIMEOUT_SECONDS)
        finally:
            self._cache.disable()
            await _close(conn)


async def _close(conn: asyncpg.Connection) -> None:
    try:
        await asyncio.wait_for(conn.close(), PING_TIMEOUT_SECONDS)
    except Exception:  # already gone, or not answering
        conn.terminate()


# --- the whole -------------------------------------------------------------------------------------

class CacheKeeper:
    """Keeps one Database's AuthCache exact: watches its sessions from the start; `start()` turns
    the cache on (SQLite: claims the data directory; PostgreSQL: LISTENs), `stop()` off."""

    def __init__(self, settings: Settings, cache: AuthCache, session_class: type[Session]) -> None:
        self.cache = cache
        self.instance_id = secrets.token_hex(8)
        self._sqlite = settings.is_sqlite
        self._data_dir = settings.data_dir.resolve()
        self._dsn = "" if self._sqlite else make_url(settings.sqlalchemy_url).set(
            drivername="postgresql").render_as_string(hide_password=False)
        self._claimed = False
        self.listener: _Listener | None = None
        watch_writes(session_class, on_change=self._changed, notify=None if self._sqlite else self.instance_id)

    def _changed(self) -> None:
        self.cache.clear()
        if self._sqlite:  # other apps of this process on the same store (the lock keeps out the rest)
            for cache in _caches_of(self._data_dir):
                cache.clear()

    async def start(self) -> None:
        if self._sqlite:
            if not self._claimed:
                _claim(self._data_dir, self.cache)
                self._claimed = True
                self.cache.enable()
        elif self.listener is None:
            self.listener = _Listener(self._dsn, self.cache, self.instance_id)
            await self.listener.start()

    async def stop(self) -> None:
        self.cache.disable()
        if self._claimed:
            _release(self._data_dir, self.cache)
            self._claimed = False
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None
