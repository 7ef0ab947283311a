"""The projects' objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2, moto's server in
tests) through boto3, each under its whole key at the bucket's root (`p/<project id>/...`).

boto3 is synchronous: every call runs in a worker thread. A put sends a small body in one
PutObject and a larger one as a multipart upload, a part at a time (memory holds one part): S3
makes the object visible only once the upload completes, so readers see the old object or the new
one, and an upload aborted (past max_bytes, or the body broke off) leaves the old one in place. A
get streams the response's body, a batch per trip to a thread (the first with the request)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from svc.adapters.blobs.s3 import S3Bucket
from svc.adapters.objects.keys import byte_range, check_key, tally
from svc.adapters.objects.port import (
    BadCursor,
    Listing,
    ObjectBody,
    ObjectInfo,
    ObjectMissing,
    ObjectTooLarge,
    RangeNotSatisfiable,
    Stored,
)

if TYPE_CHECKING:
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef

_MISSING = {"404", "NoSuchKey", "NotFound"}
# If-None-Match refused: an object is there (409: a write of the same key raced this one).
_PRECONDITION = {"412", "PreconditionFailed", "409", "ConditionalRequestConflict"}
_NOT_IMPLEMENTED = {"501", "NotImplemented"}
# Above this a body goes up as a multipart upload of parts about this large (S3's least is 5 MiB).
_PART = 8 * 1024 * 1024
_READ = 1024 * 1024
_S3_DEFAULT_TYPE = "binary/octet-stream"
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


class S3ObjectStore(S3Bucket):
    """The objects under their whole keys at the bucket's root (no prefix)."""

    # Whether the store takes If-None-Match on PutObject (AWS, R2, MinIO, Ceph do); off once one answers 501.
    _conditional = True

    # --- put ---

    async def put(self, key: str, chunks: AsyncIterable[bytes], *, max_bytes: int,
                  content_type: str | None = None) -> Stored:
        check_key(key)
        extra: dict[str, Any] = {"ContentType": content_type} if content_type else {}
        upload_id: str | None = None
        parts: list[CompletedPartTypeDef] = []
        pending: list[bytes] = []  # the next part's chunks: memory holds about one part
        held = size = 0
        # A multipart upload's object appears only at its completion: the head of the one it
        # replaces runs beside the parts, and is awaited before the completion.
        looking: asyncio.Task[ObjectInfo | None] | None = None
        try:
            async for chunk in chunks:
                size += len(chunk)
                if size > max_bytes:
                    raise ObjectTooLarge(f"the object is larger than {max_bytes} bytes")
                pending.append(chunk)
                held += len(chunk)
                if held >= _PART:
                    if upload_id is None:
                        looking = asyncio.create_task(self.head(key))
                        looking.add_done_callback(_retrieved)  # (its error, if any, is the put's)
                        created = await asyncio.to_thread(self.client.create_multipart_upload, Bucket=self.bucket,
                                                          Key=key, **extra)
                        upload_id = created["UploadId"]
                    part, pending, held = b"".join(pending), [], 0
                    parts.append(await asyncio.to_thread(self._upload_part, key, upload_id, len(parts) + 1, part))
                    del part
            if upload_id is None:
                etag, replaced = await asyncio.to_thread(self._put_whole, key, b"".join(pending), extra)
            else:
                if pending:
                    parts.append(await asyncio.to_thread(self._upload_part, key, upload_id, len(parts) + 1,
                                                         b"".join(pending)))
                assert looking is not None
                before = await looking
                replaced = before.size if before is not None else 0
                completed = await asyncio.to_thread(self.client.complete_multipart_upload, Bucket=self.bucket,
                                                    Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts})
                upload_id = None
                etag = completed["ETag"]
        except BaseException:
            if looking is not None:
                looking.cancel()
            if upload_id is not None:
                await asyncio.shield(asyncio.to_thread(self._abort, key, upload_id))
            raise
        return Stored(key=key, size=size, etag=etag, uploaded=datetime.now(UTC), content_type=content_type,
                      replaced=replaced)

    def _put_whole(self, key: str, body: bytes, extra: dict[str, Any]) -> tuple[str, int]:
        """PutObject; (the ETag, the size of the object replaced). First only if no object is there
        (If-None-Match: *, one call for a new key); refused, the object there is looked at, then
        replaced. A store without conditional writes (501, or one that ignores the header and
        replaces) is asked plainly from then on, with a head first; one that ignores it counts a
        replaced object as new until the next usage count (over, never under)."""
        if self._conditional:
            try:
                put = self.client.put_object(Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*", **extra)
                return put["ETag"], 0
            except ClientError as e:
                if _code(e) in _NOT_IMPLEMENTED:
                    self._conditional = False
                elif _code(e) not in _PRECONDITION:
                    raise
        before = self._head(key)
        put = self.client.put_object(Bucket=self.bucket, Key=key, Body=body, **extra)
        return put["ETag"], before.size if before is not None else 0

    def _upload_part(self, key: str, upload_id: str, number: int, part: bytes) -> CompletedPartTypeDef:
        done = self.client.upload_part(Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=part)
        return {"PartNumber": number, "ETag": done["ETag"]}

    def _abort(self, key: str, upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except ClientError:
            pass  # an upload never completed is not an object; the bucket's lifecycle rules clear it

    # --- get, head, delete ---

    async def get(self, key: str, *, start: int | None = None, end: int | None = None) -> ObjectBody:
        check_key(key)
        if start is not None and (start < 0 or (end is not None and end < start)):
            byte_range(0, start, end)  # raises ValueError
        if start is None and end is not None and end <= 0:
            info = await self.head(key)  # S3 has no empty range to refuse: refuse it as a range past the end
            if info is None:
                raise ObjectMissing(key)
            byte_range(info.size, start, end)
        asked: dict[str, Any] = {}
        if start is not None:
            asked["Range"] = f"bytes={start}-{'' if end is None else end}"
        elif end is not None:
            asked["Range"] = f"bytes=-{end}"

        def fetch() -> tuple[Any, bytes]:
            try:
                got = self.client.get_object(Bucket=self.bucket, Key=key, **asked)
            except ClientError as e:
                if _code(e) in _MISSING:
                    raise ObjectMissing(key) from None
                if _code(e) in ("InvalidRange", "416"):
                    actual = str(e.response.get("Error", {}).get("ActualObjectSize", ""))
                    if actual.isdigit():
                        raise RangeNotSatisfiable(int(actual)) from None
                    info = self._head(key)
                    raise RangeNotSatisfiable(0 if info is None else info.size) from None
                raise
            # The first batch in the same trip to a thread: an object up to _READ takes one.
            return got, got["Body"].read(min(int(got["ContentLength"]), _READ))

        got, first_batch = await asyncio.to_thread(fetch)
        length = int(got["ContentLength"])
        found = _CONTENT_RANGE.fullmatch(str(got.get("ContentRange") or ""))
        if found:
            first, last, size = (int(g) for g in found.groups())
        else:
            first, last, size = 0, length - 1, length
            if asked and size == 0:  # a range of an empty object (some servers answer it whole)
                got["Body"].close()
                raise RangeNotSatisfiable(0)
        info = ObjectInfo(key=key, size=size, etag=got["ETag"], uploaded=_aware(got["LastModified"]),
                          content_type=_content_type(got))
        return ObjectBody(info=info, start=first, end=last, chunks=_stream(got["Body"], first_batch, length))

    async def head(self, key: str) -> ObjectInfo | None:
        check_key(key)
        return await asyncio.to_thread(self._head, key)

    def _head(self, key: str) -> ObjectInfo | None:
        try:
            got = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as e:
            if _code(e) in _MISSING:
                return None
            raise
        return ObjectInfo(key=key, size=int(got["ContentLength"]), etag=got["ETag"],
                          uploaded=_aware(got["LastModified"]), content_type=_content_type(got))

    async def delete(self, key: str) -> ObjectInfo | None:
        check_key(key)

        def delete() -> ObjectInfo | None:
            info = self._head(key)
            if info is not None:
                self.client.delete_object(Bucket=self.bucket, Key=key)
            return info

        return await asyncio.to_thread(delete)

    # --- list, usage, delete_prefix ---

    async def list(self, prefix: str, *, cursor: str | None = None, limit: int = 1000,
                   delimiter: str | None = None) -> Listing:
        if not 1 <= limit <= 1000:
            raise ValueError(f"a listing's limit is 1-1000, not {limit}")
        asked: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix, "MaxKeys": limit}
        if cursor is not None:
            asked["ContinuationToken"] = cursor
        if delimiter:
            asked["Delimiter"] = delimiter

        def listed() -> Any:
            try:
                return self.client.list_objects_v2(**asked)
            except ClientError as e:
                # S3 checks its tokens ("The continuation token provided is incorrect").
                if _code(e) == "InvalidArgument" and cursor is not None:
                    raise BadCursor("not a cursor this store gave") from None
                raise

        got = await asyncio.to_thread(listed)
        objects = [ObjectInfo(key=o["Key"], size=int(o["Size"]), etag=o["ETag"], uploaded=_aware(o["LastModified"]))
                   for o in got.get("Contents", [])]
        prefixes = [p["Prefix"] for p in got.get("CommonPrefixes", [])]
        more = got.get("IsTruncated") and got.get("NextContinuationToken")
        return Listing(objects, prefixes, str(more) if more else None)

    def _keys(self, prefix: str) -> Iterator[tuple[str, int]]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        for page in pages:
            for o in page.get("Contents", []):
                yield o["Key"], int(o["Size"])

    async def usage(self, prefix: str) -> tuple[int, int]:
        return await asyncio.to_thread(lambda: tally(size for _key, size in self._keys(prefix)))

    async def delete_prefix(self, prefix: str) -> int:
        def delete() -> int:
            deleted = 0
            batch: list[str] = []
            for key, _size in self._keys(prefix):
                batch.append(key)
                if len(batch) == 1000:  # DeleteObjects takes at most 1000 keys
                    deleted += self._delete_batch(batch)
                    batch = []
            if batch:
                deleted += self._delete_batch(batch)
            return deleted

        return await asyncio.to_thread(delete)

    def _delete_batch(self, keys: Sequence[str]) -> int:
        got = self.client.delete_objects(Bucket=self.bucket,
                                         Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True})
        errors = got.get("Errors", [])
        if errors:
            why = f"{errors[0].get('Code')}: {errors[0].get('Message')}"
            raise RuntimeError(f"S3 refused to delete {len(errors)} objects (the first: {why})")
        return len(keys)

    def sweep_partials(self) -> int:
        """Nothing to sweep here: an upload never completed is no object (the bucket's lifecycle
        rules remove abandoned multipart uploads)."""
        return 0


async def _stream(body: Any, first: bytes, length: int) -> AsyncIterator[bytes]:
    """The response body's bytes (`first` already read), a batch per trip to a thread, up to its
    `length` (read whole, the connection goes back to the pool: no trip to read the end);
    closing releases the connection."""
    try:
        left = length - len(first)
        if first:
            yield first
        while left > 0:
            chunk = await asyncio.to_thread(body.read, min(left, _READ))
            if not chunk:
                return
            left -= len(chunk)
            yield chunk
    finally:
        body.close()


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _content_type(got: Any) -> str | None:
    """The object's content type; None for one stored without (S3 answers its default for those)."""
    found = got.get("ContentType")
    return None if not found or found == _S3_DEFAULT_TYPE else str(found)


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))
