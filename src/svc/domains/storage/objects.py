"""A project's objects (docs/storage.md): what the API's routes, the runtime's env.storage and the
dashboard call, with the project's key everywhere (never the whole key: only this module makes
`p/{projectId}/` + key, so no key a tenant writes reaches past its own prefix).

Each call checks the store is there (503 storage_unavailable), the grant (404 not_granted) and the
key (400). A write holds its declared length against the quota before the upload: with the grant
row held, used + the writes in flight + length must stay within the plan's quota (413
storage_quota_exceeded), and the reservation is written; the upload then runs with nothing of the
store held; once it is whole, the reservation goes and usedBytes moves by the object's size less
the one it replaced, in one short transaction. So concurrent writes never pass the quota together,
between the usage counts too. A reservation a crashed process left is released by the usage cycle
(jobs.py) once it is older than any upload should take."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import unicodedata
from collections.abc import AsyncIterable, AsyncIterator

from svc.adapters.objects.port import (
    BadCursor,
    Listing,
    ObjectBody,
    ObjectInfo,
    ObjectMissing,
    ObjectStore,
    ObjectTooLarge,
)
from svc.adapters.objects.port import RangeNotSatisfiable as StoreRangeNotSatisfiable
from svc.context import AppContext
from svc.domains.orgs import service as orgs
from svc.domains.storage import errors, queries
from svc.errors import BadRequest
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import ProjectState
from svc.uow import Tx, unit_of_work

# S3's bound on a whole key; the project's key has what the prefix leaves of it.
MAX_WHOLE_KEY_BYTES = 1024
MAX_LIST = 1000
MAX_CONTENT_TYPE = 255


def prefix_for(project_id: str) -> str:
    """decisions.md: by the project's id, so a rename never moves objects."""
    return f"p/{project_id}/"


def store(ctx: AppContext) -> ObjectStore:
    objects = ctx.adapters.objects
    if objects is None:
        why = ctx.adapters.off.get("objects")
        raise errors.StorageUnavailable(f"This svc has no object store ({why})" if why else None)
    return objects


def check_key(key: str, project_id: str) -> None:
    """1 to 1024 bytes of UTF-8 with the prefix (S3's bound), no control character, no leading
    "/", no "." or ".." segment: a key names one object of the project's, never a path out."""
    _check_text(key, project_id, "key")
    if not key:
        raise errors.BadKey.of_field("key", "must not be empty")
    if any(segment in (".", "..") for segment in key.split("/")):
        raise errors.BadKey.of_field("key", 'must not have a "." or ".." segment')


def check_prefix(prefix: str, project_id: str) -> None:
    """A listing's prefix: as a key, but empty allowed, and its last segment may be a part of one."""
    _check_text(prefix, project_id, "prefix")
    if any(segment in (".", "..") for segment in prefix.split("/")[:-1]):
        raise errors.BadKey.of_field("prefix", 'must not have a "." or ".." segment')


def _check_text(key: str, project_id: str, field: str) -> None:
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise errors.BadKey.of_field(field, "must be UTF-8") from None
    most = MAX_WHOLE_KEY_BYTES - len(prefix_for(project_id).encode())
    if size > most:
        raise errors.BadKey.of_field(field, f"must be at most {most} bytes of UTF-8", reason="string_too_long")
    if any(unicodedata.category(c) == "Cc" for c in key):
        raise errors.BadKey.of_field(field, "must not contain control characters")
    if key.startswith("/"):
        raise errors.BadKey.of_field(field, 'must not start with "/"')


async def _granted(ctx: AppContext, project_id: str) -> str:
    """The project's prefix, once its grant is checked."""
    async with unit_of_work(ctx, Tx.READ) as uow:
        grant = await queries.grant(uow.session, project_id)
    if grant is None or grant.revoked_at is not None:
        raise errors.NotGranted()
    return grant.prefix


def _theirs(info: ObjectInfo, prefix: str) -> ObjectInfo:
    return dataclasses.replace(info, key=info.key.removeprefix(prefix))


async def put(ctx: AppContext, project_id: str, key: str, chunks: AsyncIterable[bytes], *,
              length: int, content_type: str | None) -> ObjectInfo:
    """Store the body (at most `length` bytes, streamed) under the project's key; the object as
    stored. Refused before a byte is read when `length` would pass the quota."""
    objects = store(ctx)
    check_key(key, project_id)
    if length < 0:
        raise BadRequest.of_field("length", "must be 0 or more")
    if content_type is not None and (len(content_type) > MAX_CONTENT_TYPE
                                     or any(unicodedata.category(c) == "Cc" for c in content_type)):
        raise BadRequest.of_field("contentType", f"must be at most {MAX_CONTENT_TYPE} characters, none a control one")
    reservation, prefix = await _reserve(ctx, project_id, length)
    whole = prefix + key
    try:
        info = await objects.put(whole, chunks, max_bytes=length, content_type=content_type)
    except BaseException as exc:
        # Shielded: a client gone midway (the request cancelled) still gives its hold back.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(_release(ctx, reservation))
        if isinstance(exc, ObjectTooLarge):
            raise errors.BodyTooLong(f"The body ran past its declared length ({length} bytes): nothing was "
                                     "stored") from None
        raise
    await asyncio.shield(_settle(ctx, project_id, reservation, whole, info.size - info.replaced))
    return _theirs(info, prefix)


async def _reserve(ctx: AppContext, project_id: str, length: int) -> tuple[str, str]:
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        room = await queries.room(uow.session, project_id)
        if room is None or room.revoked or room.state != ProjectState.active:
            raise errors.NotGranted()
        limit = orgs.limits_of(ctx.config, room.plan).storage_bytes
        held = await queries.reserved(uow.session, project_id)
        if room.used + held + length > limit:
            raise errors.QuotaExceeded(
                f"Writing {length} bytes would pass the project's storage quota of {limit} bytes: it uses "
                f"{room.used} bytes, and writes in flight hold {held} more",
                details={"quotaBytes": limit, "usedBytes": room.used, "inFlightBytes": held,
                         "lengthBytes": length})
        reservation = new_id("sto")
        await queries.reserve(uow.session, reservation_id=reservation, project_id=project_id, size=length,
                              now=utcnow())
        return reservation, room.prefix


async def _release(ctx: AppContext, reservation: str) -> None:
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        await queries.unreserve(uow.session, reservation)


async def _settle(ctx: AppContext, project_id: str, reservation: str, whole: str, delta: int) -> None:
    """The hold let go and the write counted. A project being deleted meanwhile takes the object
    back out: its teardown may have emptied the prefix already, and nothing lands behind it."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        counted = await queries.settle(uow.session, reservation, project_id, delta)
    if not counted:
        await store(ctx).delete(whole)
        raise errors.NotGranted()


async def get(ctx: AppContext, project_id: str, key: str, *, start: int | None = None,
              end: int | None = None) -> ObjectBody:
    """The object, or its inclusive byte range [start, end] (start None: the last `end` bytes)."""
    objects = store(ctx)
    check_key(key, project_id)
    prefix = await _granted(ctx, project_id)
    try:
        body = await objects.get(prefix + key, start=start, end=end)
    except ObjectMissing:
        raise errors.ObjectNotFound() from None
    except StoreRangeNotSatisfiable as exc:
        raise errors.RangeNotSatisfiable(f"The range starts at or past the object's end ({exc.size} bytes)",
                                         details={"size": exc.size}, headers={"content-range": f"bytes */{exc.size}"}
                                         ) from None
    body.info = _theirs(body.info, prefix)
    return body


async def head(ctx: AppContext, project_id: str, key: str) -> ObjectInfo | None:
    objects = store(ctx)
    check_key(key, project_id)
    prefix = await _granted(ctx, project_id)
    info = await objects.head(prefix + key)
    return _theirs(info, prefix) if info is not None else None


async def delete(ctx: AppContext, project_id: str, key: str) -> None:
    """Idempotent; what the object held leaves usedBytes at once."""
    objects = store(ctx)
    check_key(key, project_id)
    prefix = await _granted(ctx, project_id)
    deleted = await objects.delete(prefix + key)
    if deleted is not None and deleted.size:
        async with unit_of_work(ctx, Tx.WRITE) as uow:
            await queries.add_used(uow.session, project_id, -deleted.size)


async def list(ctx: AppContext, project_id: str, *, prefix: str = "", cursor: str | None = None,
               limit: int = 1000, delimiter: str | None = None) -> Listing:
    """The project's objects whose key starts with `prefix`, in key order, a page at a time."""
    objects = store(ctx)
    check_prefix(prefix, project_id)
    if not 1 <= limit <= MAX_LIST:
        raise BadRequest.of_field("limit", f"must be from 1 to {MAX_LIST}")
    if delimiter is not None and (not delimiter or len(delimiter) > 16
                                  or any(unicodedata.category(c) == "Cc" for c in delimiter)):
        raise BadRequest.of_field("delimiter", "must be 1 to 16 characters, none a control one")
    if cursor is not None and (not cursor or len(cursor) > 2048):
        raise BadRequest.of_field("cursor", "must be a nextCursor this listing gave")
    own = await _granted(ctx, project_id)
    try:
        listed = await objects.list(own + prefix, cursor=cursor, limit=limit, delimiter=delimiter)
    except BadCursor:
        raise BadRequest.of_field("cursor", "must be a nextCursor this listing gave") from None
    return Listing(objects=[_theirs(o, own) for o in listed.objects if o.key.startswith(own)],
                   prefixes=[p.removeprefix(own) for p in listed.prefixes if p.startswith(own)],
                   cursor=listed.cursor)


async def chunks_of(body: ObjectBody) -> AsyncIterator[bytes]:
    """The body's bytes, its stream closed however the reader ends (a client gone midway)."""
    try:
        async for chunk in body.chunks:
            yield chunk
    finally:
        closing = getattr(body.chunks, "aclose", None)
        if closing is not None:
            await closing()

