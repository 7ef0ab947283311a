"""An in-process cache of credential resolution for read requests.

A GET on an org-scoped route would otherwise spend one query (credential + user + org + role) of
its two on who is calling. The cache keeps, per token hash, the resolved principal and, per
(token hash, org slug), the org and the caller's role there (or that the caller is not a member).

It is exact, not eventually consistent (auth/invalidation.py): every committed write to the
tables it is built from clears it, in this process at once and in other `svc serve` processes
sharing a PostgreSQL store through LISTEN/NOTIFY before they use it again; while that channel is
down the cache is off. On top of that:
- only successful resolutions are kept (a new token works at once, nothing to invalidate);
- a credential's expiry is checked against the clock on every hit;
- entries live at most `max_age` seconds and the newest `max_entries` are kept (a safety net);
- an entry computed from a read that raced with a clear is dropped (`generation`).
Only read requests (GET/HEAD/OPTIONS) use it; a write always resolves from the store, with
objects attached to its own session.

The objects in the cache (a `User`, an `Org`) are detached copies shared by concurrent requests:
read them, never change them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

from sqlalchemy import inspect
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value

from svc.auth.caller import Resolved
from svc.kit.clock import utcnow

MAX_ENTRIES = 10_000
MAX_AGE_SECONDS = 60.0

T = TypeVar("T")


def detached_copy(obj: T) -> T:
    """A copy of a loaded ORM object with its column values, detached (in no session), so the
    session it came from cannot expire or change the cached one."""
    mapper = inspect(type(obj))
    copy: T = mapper.class_manager.new_instance()
    for attr in mapper.column_attrs:
        set_committed_value(copy, attr.key, getattr(obj, attr.key))
    make_transient_to_detached(copy)
    return copy


@dataclass(frozen=True, slots=True)
class _Credential:
    resolved: Resolved  # without an org
    expires_at: datetime | None
    born: float


@dataclass(frozen=True, slots=True)
class _InOrg:
    resolved: Resolved  # with the org and role, or neither (no such org, or not a member)
    born: float


class AuthCache:
    def __init__(self, *, max_entries: int = MAX_ENTRIES, max_age: float = MAX_AGE_SECONDS) -> None:
        self.max_entries = max_entries
        self.max_age = max_age
        # Off until what keeps it exact is running (Database.start); off again when that stops.
        self.enabled = False
        # Bumped by every clear; a value computed before a clear is not stored after it.
        self.generation = 0
        self.hits = 0
        self.misses = 0
        self._credentials: OrderedDict[str, _Credential] = OrderedDict()
        self._orgs: OrderedDict[tuple[str, str], _InOrg] = OrderedDict()

    def __len__(self) -> int:
        return len(self._credentials) + len(self._orgs)

    def lookup(self, digest: str, org_slug: str | None) -> Resolved | None:
        """The cached resolution of a token (by its hash), with its membership of `org_slug` when
        given; None when not cached (then resolve from the store and `store` the result)."""
        if not self.enabled:
            return None
        credential = self._credentials.get(digest)
        oldest = time.monotonic() - self.max_age
        if credential is None or credential.born < oldest or (
                credential.expires_at is not None and credential.expires_at <= utcnow()):
            self.misses += 1
            return None
        if org_slug is None:
            self._credentials.move_to_end(digest)
            self.hits += 1
            return credential.resolved
        key = (digest, org_slug)
        in_org = self._orgs.get(key)
        if in_org is None or in_org.born < oldest:
            self.misses += 1
            return None
        self._credentials.move_to_end(digest)
        self._orgs.move_to_end(key)
        self.hits += 1
        return in_org.resolved

    def store(self, generation: int, digest: str, org_slug: str | None, resolved: Resolved,
              expires_at: datetime | None) -> None:
        """Keep a successful resolution read from the store. `generation` is the value of
        `self.generation` taken before the read: if the cache was cleared since, the read may
        predate the change that cleared it, and is not kept. `resolved` must hold objects no
        session owns (detached_copy)."""
        if not self.enabled or generation != self.generation:
            return
        now = time.monotonic()
        principal_only = resolved if org_slug is None else replace(resolved, org=None, role=None)
        self._credentials[digest] = _Credential(principal_only, expires_at, now)
        self._credentials.move_to_end(digest)
        if len(self._credentials) > self.max_entries:
            self._credentials.popitem(last=False)
        if org_slug is not None:
            key = (digest, org_slug)
            self._orgs[key] = _InOrg(resolved, now)
            self._orgs.move_to_end(key)
            if len(self._orgs) > self.max_entries:
                self._orgs.popitem(last=False)

    def clear(self) -> None:
        self.generation += 1
        self._credentials.clear()
        self._orgs.clear()

    def enable(self) -> None:
        """Start afresh: whatever happened while the cache was off is not in it."""
        self.clear()
        self.enabled = True

    def disable(self) -> None:
        self.enabled = False
        self.clear()
