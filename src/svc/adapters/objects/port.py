"""The projects' object store (docs/storage.md): keys are whole keys (`p/{projectId}/<the
project's key>`, made by domains/storage, never by a tenant); the store neither knows nor checks
projects. Any key S3 accepts (1-1024 bytes of UTF-8) round-trips; a backend keeps every key inside
its own bucket or directory whatever the key holds (`..`, `%2F`, `/`)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


class ObjectMissing(Exception):
    """No object under that key."""


class ObjectTooLarge(Exception):
    """The body ran past the bytes the writer was allowed (`max_bytes`); nothing was stored."""


class BadCursor(ValueError):
    """A listing's cursor this store never gave (a client's own making)."""


class RangeNotSatisfiable(Exception):
    """The range starts at or past the object's end."""

    def __init__(self, size: int) -> None:
        super().__init__(f"range not satisfiable (object of {size} bytes)")
        self.size = size


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    etag: str  # quoted as S3 gives it: '"<md5 hex>"' for a single-part upload
    uploaded: datetime  # aware, UTC
    content_type: str | None = None


@dataclass(frozen=True)
class Stored(ObjectInfo):
    """What a put stored, and the size of the object it replaced (0: none), for the project's
    usedBytes: a backend learns it as it writes, so a put needs no look beforehand."""

    replaced: int = 0


@dataclass
class ObjectBody:
    info: ObjectInfo
    # The bytes asked for: the whole object, or [start, end] inclusive when a range was given.
    start: int
    end: int  # inclusive; -1 for an empty object
    chunks: AsyncIterator[bytes]  # read once; closing it (aclose) releases the connection/file

    @property
    def length(self) -> int:
        return self.end - self.start + 1


@dataclass(frozen=True)
class Listing:
    objects: list[ObjectInfo]  # in key order (UTF-8 bytes, as S3 lists)
    # Keys ending at `delimiter` below the prefix, when one was given (R2's delimitedPrefixes).
    prefixes: list[str]
    cursor: str | None  # pass back for the next page; None: the last page


class ObjectStore(Protocol):
    description: str

    async def put(self, key: str, chunks: AsyncIterable[bytes], *, max_bytes: int,
                  content_type: str | None = None) -> Stored:
        """Store the streamed body under key, replacing what was there once the body is whole
        (readers see the old object or the new one, never a part). More than max_bytes: raise
        ObjectTooLarge and keep the old object. `replaced`: the size of the object replaced, as
        seen just before (a write racing this one may be missed, as with a head beforehand)."""
        ...

    async def get(self, key: str, *, start: int | None = None, end: int | None = None) -> ObjectBody:
        """The object, or the inclusive byte range [start, end] of it (end past the object: up to
        its end; start None with end: the last `end` bytes, as HTTP's suffix range). Raise
        ObjectMissing, RangeNotSatisfiable."""
        ...

    async def head(self, key: str) -> ObjectInfo | None: ...

    async def delete(self, key: str) -> ObjectInfo | None:
        """Idempotent; what was deleted (None: nothing was there)."""
        ...

    async def list(self, prefix: str, *, cursor: str | None = None, limit: int = 1000,
                   delimiter: str | None = None) -> Listing:
        """Objects whose key starts with prefix, after the cursor, at most `limit` (1-1000)."""
        ...

    async def usage(self, prefix: str) -> tuple[int, int]:
        """(bytes, objects) under prefix, counted from the store."""
        ...

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object under prefix (idempotent); how many were deleted."""
        ...
