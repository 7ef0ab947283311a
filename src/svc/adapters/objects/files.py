"""The projects' objects as files under a directory (SVC_DATA_DIR/objects by default).

A key's segments (split at "/") are a path of directories, one per segment but the last, which
names the object's file. Every name is made by the store, never taken from the key: "d" (a
directory) or "f" (an object) followed by the segment percent-encoded (so "..", "%2F", "" and
NUL are plain names, and the store's own names, which start with ".", are never one); a segment
whose name would pass the file system's 255 bytes is named "xd"/"xf" + its sha256, the segment
itself kept in the directory's `.segment` file (or the object's trailer). Whatever the key holds,
its object stays under the root, and a key's path is its own (two keys never share a file).

An object's file is its bytes, then a trailer: JSON (its key, content type, etag, upload time)
and that JSON's length in 4 bytes, so a put writes the file in one pass and a range reads from
the start. A put writes a temporary file under `.tmp`, flushed to disk, then renamed over the
object's file: readers see the old object or the new one, whole, never a part. Temporary names
carry the writer's pid and a per-process token; `sweep_partials` (at start) removes those a dead
process left. A listing walks the directories in key order (UTF-8 bytes, as S3 lists), so a page
reads only what it returns and what the cursor skips."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import hashlib
import json
import os
import struct
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO
from urllib.parse import unquote

from svc.adapters.objects.keys import byte_range, check_key, tally
from svc.adapters.objects.port import BadCursor, Listing, ObjectBody, ObjectInfo, ObjectMissing, ObjectTooLarge, Stored
from svc.kit.files import fsync_dir, partial_name, remove_path, sweep_stale

_TMP = ".tmp"
_SEGMENT = ".segment"  # in a hashed directory: the segment it stands for
_NAME_MAX = 250  # below the usual 255-byte limit of a file name
_TRAILER_LENGTH = struct.Struct(">I")
# What a put keeps in memory before writing it out, and what a get reads at a time: large enough
# that a 1 MB object takes one trip to a thread, small enough that memory stays flat.
_BATCH = 1024 * 1024


def encode_cursor(after: str, *, prefix: bool) -> str:
    """A cursor: resume after `after`, a key, or a delimited prefix (then after everything in it)."""
    return base64.urlsafe_b64encode(("p" if prefix else "k").encode() + after.encode()).decode()


def decode_cursor(cursor: str) -> tuple[str, bool]:
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
    except (ValueError, UnicodeError):
        raise BadCursor("not a cursor this store gave") from None
    if raw[:1] not in ("k", "p"):
        raise BadCursor("not a cursor this store gave")
    return raw[1:], raw[0] == "p"


# What a name keeps as it is: lower-case letters, digits and "-_.~". Everything else is
# percent-encoded, capitals too, so that two keys never share a file on a file system that folds
# case (macOS's) or normalizes Unicode.
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.~")


def _encode(segment: str) -> str:
    return "".join(c if c in _PLAIN else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in segment)


def _name(kind: str, segment: str) -> str:
    name = kind + _encode(segment)
    if len(name) <= _NAME_MAX:
        return name
    return "x" + kind + hashlib.sha256(segment.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Entry:
    order: str  # what it sorts by among its siblings: the segment, "/" after a directory's
    path: str  # (a str: the walk makes many, and pathlib's are slow to make)
    key: str  # an object's key, or a directory's prefix (ending in "/")
    is_dir: bool


class FileObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.description = f"files under {root}"

    # --- paths ---

    def _path(self, key: str) -> Path:
        check_key(key)
        *dirs, last = key.split("/")
        path = self.root
        for segment in dirs:
            path = path / _name("d", segment)
        return path / _name("f", last)

    def _make_dirs(self, key: str) -> Path:
        """The object's directory, made (with the segments of hashed ones) if missing."""
        path = self.root
        for segment in key.split("/")[:-1]:
            path = path / _name("d", segment)
            if not path.is_dir():
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            if path.name[:2] == "xd" and not (path / _SEGMENT).is_file():
                self._write_small(path / _SEGMENT, segment.encode("utf-8"))
        return path

    def _write_small(self, dest: Path, data: bytes) -> None:
        tmp = self._tmp_dir() / partial_name("put")
        try:
            with open(tmp, "wb", opener=_private) as f:
                f.write(data)
            os.replace(tmp, dest)
        finally:
            remove_path(tmp)

    def _tmp_dir(self) -> Path:
        tmp = self.root / _TMP
        if not tmp.is_dir():
            tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
        return tmp

    # --- put ---

    async def put(self, key: str, chunks: AsyncIterable[bytes], *, max_bytes: int,
                  content_type: str | None = None) -> Stored:
        check_key(key)
        writer = _Writer(self._tmp_dir)
        try:
            pending: list[bytes] = []
            held = 0
            async for chunk in chunks:
                if not chunk:
                    continue
                if writer.size + held + len(chunk) > max_bytes:
                    raise ObjectTooLarge(f"the object is larger than {max_bytes} bytes")
                pending.append(chunk)
                held += len(chunk)
                if held >= _BATCH:
                    await asyncio.to_thread(writer.write, pending)
                    pending, held = [], 0
            info = await asyncio.to_thread(self._finish, writer, pending, key, content_type)
        finally:
            if writer.path is not None:  # not renamed into place: an error, or past max_bytes
                await asyncio.to_thread(writer.discard)
        return info

    def _finish(self, writer: _Writer, pending: list[bytes], key: str, content_type: str | None) -> Stored:
        writer.write(pending)
        info = Stored(key=key, size=writer.size, etag=f'"{writer.md5.hexdigest()}"',
                      uploaded=datetime.now(UTC), content_type=content_type)
        tmp = writer.close(_trailer(info))
        # A delete may remove an emptied directory between making it and the rename: make it again.
        name = self._path(key).name
        for attempt in range(5):
            try:
                dest = self._make_dirs(key) / name
                replaced = _size(str(dest))  # the object about to be replaced, read off its file's end
                os.replace(tmp, dest)
            except FileNotFoundError:
                if attempt == 4:
                    raise
                continue
            writer.path = None
            fsync_dir(dest.parent)
            return dataclasses.replace(info, replaced=replaced or 0)
        raise AssertionError("unreachable")

    # --- get, head, delete ---

    async def get(self, key: str, *, start: int | None = None, end: int | None = None) -> ObjectBody:
        path = self._path(key)
        f, info = await asyncio.to_thread(_open, path, key)
        try:
            first, last = byte_range(info.size, start, end)
        except BaseException:
            f.close()
            raise
        return ObjectBody(info=info, start=first, end=last, chunks=_read(f, first, last))

    async def head(self, key: str) -> ObjectInfo | None:
        return await asyncio.to_thread(_info, self._path(key))

    async def delete(self, key: str) -> ObjectInfo | None:
        return await asyncio.to_thread(self._delete, self._path(key))

    def _delete(self, path: Path) -> ObjectInfo | None:
        info = _info(path)
        if info is None:
            return None
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self._prune(path.parent)
        return info

    def _prune(self, directory: Path) -> None:
        """Remove the emptied directories above a deleted object (rmdir refuses one that is not
        empty, as one a writer has just put an object in). Hashed ones stay: their `.segment`
        must never go while a writer may be putting an object in them."""
        while directory != self.root and directory.name[:1] == "d":
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    # --- list, usage, delete_prefix ---

    async def list(self, prefix: str, *, cursor: str | None = None, limit: int = 1000,
                   delimiter: str | None = None) -> Listing:
        if not 1 <= limit <= 1000:
            raise ValueError(f"a listing's limit is 1-1000, not {limit}")
        if delimiter == "":
            delimiter = None
        after, skip = decode_cursor(cursor) if cursor is not None else (None, False)
        return await asyncio.to_thread(self._list, prefix, after, skip, limit, delimiter)

    def _list(self, prefix: str, after: str | None, after_prefix: bool, limit: int,
              delimiter: str | None) -> Listing:
        objects: list[ObjectInfo] = []
        prefixes: list[str] = []
        walk = _Walk(self.root, prefix, after, skip=after if after_prefix else None)
        last: tuple[str, bool] | None = None
        for entry in walk:
            if len(objects) + len(prefixes) == limit:
                assert last is not None
                return Listing(objects, prefixes, encode_cursor(last[0], prefix=last[1]))
            if delimiter is not None:
                at = entry.key.find(delimiter, len(prefix))
                if at >= 0:
                    common = entry.key[:at + len(delimiter)]
                    prefixes.append(common)
                    walk.skip = common  # the rest of it is in this one line
                    last = (common, True)
                    continue
            info = _info(entry.path)
            if info is None:  # deleted since the walk saw it
                continue
            objects.append(info)
            last = (entry.key, False)
        return Listing(objects, prefixes, None)

    async def usage(self, prefix: str) -> tuple[int, int]:
        def sizes() -> Iterator[int]:
            for entry in _Walk(self.root, prefix, None):
                size = _size(entry.path)
                if size is not None:  # not deleted since the walk saw it
                    yield size

        return await asyncio.to_thread(lambda: tally(sizes()))

    async def delete_prefix(self, prefix: str) -> int:
        def delete() -> int:
            paths = [Path(entry.path) for entry in _Walk(self.root, prefix, None)]
            deleted = 0
            for path in paths:
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                deleted += 1
            for directory in sorted({p.parent for p in paths}, key=lambda p: len(p.parts), reverse=True):
                self._prune(directory)
            return deleted

        return await asyncio.to_thread(delete)

    def sweep_partials(self) -> int:
        """Remove the temporary files writers killed mid-write left (blocking; at start); how many."""
        return sweep_stale(self.root / _TMP, "put")


class _Writer:
    """A put's temporary file, opened at the first bytes."""

    def __init__(self, tmp_dir: Callable[[], Path]) -> None:
        self._tmp_dir = tmp_dir
        self.path: Path | None = None
        self.file: IO[bytes] | None = None
        self.size = 0
        self.md5 = hashlib.md5(usedforsecurity=False)

    def write(self, chunks: list[bytes]) -> None:
        if self.file is None:
            self.path = self._tmp_dir() / partial_name("put")
            self.file = open(self.path, "wb", opener=_private)  # closed by close() or discard()
        for chunk in chunks:
            self.file.write(chunk)
            self.md5.update(chunk)
            self.size += len(chunk)

    def close(self, trailer: bytes) -> Path:
        """Write the trailer, flush to disk, close: the path to rename into place."""
        if self.file is None:
            self.write([])
        assert self.file is not None and self.path is not None
        self.file.write(trailer)
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        self.file = None
        return self.path

    def discard(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        if self.path is not None:
            remove_path(self.path)  # the temporary file, never renamed into place


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def _trailer(info: ObjectInfo) -> bytes:
    meta = json.dumps({"key": info.key, "contentType": info.content_type, "etag": info.etag,
                       "uploaded": info.uploaded.isoformat()}, ensure_ascii=False).encode("utf-8")
    return meta + _TRAILER_LENGTH.pack(len(meta))


def _body_size(f: IO[bytes]) -> tuple[int, int]:
    """(the object's size, its trailer's JSON length), from the end of its file."""
    end = f.seek(0, os.SEEK_END)
    f.seek(end - _TRAILER_LENGTH.size)
    length = int(_TRAILER_LENGTH.unpack(f.read(_TRAILER_LENGTH.size))[0])
    return end - _TRAILER_LENGTH.size - length, length


def _read_trailer(f: IO[bytes]) -> ObjectInfo:
    size, length = _body_size(f)
    f.seek(size)
    meta = json.loads(f.read(length))
    return ObjectInfo(key=meta["key"], size=size, etag=meta["etag"],
                      uploaded=datetime.fromisoformat(meta["uploaded"]), content_type=meta["contentType"])


def _open(path: Path, key: str) -> tuple[IO[bytes], ObjectInfo]:
    try:
        f = open(path, "rb")  # the body's chunks close it
    except (FileNotFoundError, NotADirectoryError):
        raise ObjectMissing(key) from None
    try:
        return f, _read_trailer(f)
    except BaseException:
        f.close()
        raise


def _info(path: Path | str) -> ObjectInfo | None:
    try:
        with open(path, "rb") as f:
            return _read_trailer(f)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _size(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            return _body_size(f)[0]
    except FileNotFoundError:
        return None


async def _read(f: IO[bytes], start: int, end: int) -> AsyncIterator[bytes]:
    """The bytes [start, end] of the open file, a batch per trip to a thread; closes it."""

    def read(at: int, n: int) -> bytes:
        f.seek(at)
        return f.read(n)

    try:
        at = start
        while at <= end:
            chunk = await asyncio.to_thread(read, at, min(_BATCH, end - at + 1))
            if not chunk:
                break
            at += len(chunk)
            yield chunk
    finally:
        f.close()


class _Walk:
    """The objects whose key starts with `prefix` and is past `after`, in key order (code point
    order of str is UTF-8 byte order), read lazily: a directory is read when the walk reaches it.
    Siblings sort by their segment, a directory's with "/" after it: every key under a directory
    starts with that, and no sibling's segment (which holds no "/") falls among them. Setting
    `skip` (a prefix) leaves out every key that starts with it, its directories unread."""

    def __init__(self, root: Path, prefix: str, after: str | None, skip: str | None = None) -> None:
        self.root = root
        self.prefix = prefix
        self.after = after
        self.skip = skip

    def __iter__(self) -> Iterator[_Entry]:
        *dirs, partial = self.prefix.split("/")
        path = self.root
        for segment in dirs:
            path = path / _name("d", segment)
        base = "".join(s + "/" for s in dirs)
        if not path.is_dir():
            return
        yield from self._dir(str(path), base, partial)

    def _passed(self, key: str) -> bool:
        """Every key starting with `key` (a directory's prefix) is at or before the cursor or skipped."""
        if self.skip is not None and key.startswith(self.skip):
            return True
        after = self.after
        return after is not None and after >= key and not after.startswith(key)

    def _dir(self, path: str, base: str, partial: str) -> Iterator[_Entry]:
        entries = []
        try:
            names = os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        for name in names:
            child = os.path.join(path, name)
            segment = self._segment(child, name)
            if segment is None or not segment.startswith(partial):
                continue
            is_dir = name[:1] == "d" or name[:2] == "xd"
            key = base + segment + ("/" if is_dir else "")
            entries.append(_Entry(segment + ("/" if is_dir else ""), child, key, is_dir))
        entries.sort(key=lambda e: e.order)
        for entry in entries:
            if entry.is_dir:
                if not self._passed(entry.key):
                    yield from self._dir(entry.path, entry.key, "")
            elif not (self.skip is not None and entry.key.startswith(self.skip)) and (
                    self.after is None or entry.key > self.after):
                yield entry

    @staticmethod
    def _segment(path: str, name: str) -> str | None:
        kind = name[:2] if name[:1] == "x" else name[:1]
        if kind in ("d", "f"):
            try:
                return unquote(name[1:], errors="strict")
            except UnicodeDecodeError:
                return None  # not a name the store made
        if kind == "xd":
            try:
                with open(os.path.join(path, _SEGMENT), "rb") as f:
                    return f.read().decode("utf-8")
            except FileNotFoundError:
                return None  # being made: nothing in it yet
        if kind == "xf":
            info = _info(path)
            return None if info is None else info.key.rsplit("/", 1)[-1]
        return None  # the store's own (.tmp, .segment)
