"""The bundle validator and extractor: gzip -> tar -> files, fed chunk by chunk.

Synchronous and thread-confined (the upload path runs it in a worker thread, fed as the body
arrives). Its own tar reader rather than `tarfile`, because tarfile reads pax headers and GNU
long names whole into memory and cannot stop at a bound before it has read the data; here every
byte is checked as it streams by and memory stays bounded by the chunk size:

- gzip: one or more members (as `gzip -d` accepts); anything that is not gzip, a corrupt or
  truncated stream, and bytes after the last member are refused. Inflation is bounded per call,
  so a bomb never produces more than `_INFLATE_STEP` bytes at a time.
- tar: ustar, GNU and pax (POSIX 2001) headers; checksums verified. Regular files and
  directories only: symlinks, hardlinks, devices, fifos, sparse and volume entries are refused.
  A pax `path`/`size` or a GNU long name replaces the header's; pax bodies and long names are
  capped (64 KiB / 4 KiB). Global pax headers (`git archive` writes one) are read and ignored.
  The archive must end with its end-of-archive block; after it only zero padding may follow.
- names: UTF-8, relative, no `..` component, no backslash, NUL or control character, at most
  255 bytes per component and 1024 per path. `./` prefixes and empty components are dropped.
  Each path may appear once: two entries for one path (file or directory), a file where a
  directory is needed, or a directory where a file is, are refused. Paths are case-sensitive
  (as URLs are): `Index.html` and `index.html` are two files.
- bounds: entries (files and directories), the sum of file sizes (checked from each header,
  before its data is read) and the inflated stream (file sizes plus 4 KiB per allowed entry).
- `svc.json` must be a regular file at the root, at most 64 KiB, holding a JSON object.

Files are written 0644 and directories 0755 (tar modes and owners are ignored) with O_EXCL and
O_NOFOLLOW into `dest`, which must be a fresh empty directory."""

from __future__ import annotations

import json
import math
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc.domains.deployments.errors import BadBundle, BundleTooLarge

MANIFEST = "svc.json"
MAX_MANIFEST_BYTES = 64 * 1024
MAX_PAX_BYTES = 64 * 1024
MAX_LONGNAME_BYTES = 4096
MAX_PATH_BYTES = 1024
MAX_COMPONENT_BYTES = 255
HEADER_ALLOWANCE = 4096  # inflated bytes allowed per entry beyond the file data (headers, padding)

_BLOCK = 512
_ZERO_BLOCK = bytes(_BLOCK)
_INFLATE_STEP = 1024 * 1024
_ZERO_STEP = bytes(_INFLATE_STEP)
_OCTAL = re.compile(rb"[0-7]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

# Tar entry types (POSIX ustar, GNU, pax).
_REGULAR = frozenset(b"0\x007")
_DIRECTORY = ord("5")
_LINKS = frozenset(b"12K")
_SPECIAL = frozenset(b"346")
_PAX = ord("x")
_PAX_GLOBAL = ord("g")
_LONGNAME = ord("L")

_HEADER, _DATA, _PAD, _META, _END = range(5)


@dataclass(frozen=True)
class Limits:
    compressed: int
    unpacked: int
    entries: int

    @property
    def inflated(self) -> int:
        return self.unpacked + HEADER_ALLOWANCE * self.entries + _INFLATE_STEP


@dataclass
class Unpacked:
    """What a valid bundle held."""

    manifest: dict[str, Any]
    file_count: int
    dir_count: int
    unpacked_bytes: int
    files: list[str] = field(repr=False)


def bad(reason: str, message: str, path: str | None = None) -> BadBundle:
    details: dict[str, Any] = {"reason": reason}
    if path is not None:
        details["path"] = path[:300]
    return BadBundle(message, details=details)


def too_large(limit: str, maximum: int) -> BundleTooLarge:
    return BundleTooLarge(f"The bundle is over the {limit} bound of {maximum:,}", details={"limit": limit,
                                                                                           "max": maximum})


def _number(raw: bytes) -> int:
    if raw[:1] in (b"\x80", b"\xff"):  # GNU base-256
        if raw[0] == 0xFF:
            raise bad("corrupt_tar", "A tar header holds a negative number")
        return int.from_bytes(raw[1:], "big")
    text = raw.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    if not _OCTAL.fullmatch(text):
        raise bad("corrupt_tar", "A tar header holds a field that is not a number")
    return int(text, 8)


def _text(raw: bytes, what: str) -> str:
    """A NUL-terminated name field: NUL padding only after the name, UTF-8."""
    value, _, rest = raw.partition(b"\0")
    if rest.strip(b"\0"):
        raise bad("bad_name", f"A {what} holds a NUL character")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise bad("bad_name", f"A {what} is not UTF-8") from None


def normalize(name: str) -> str:
    """The safe relative path of an entry name ('' is the bundle's root), or BadBundle."""
    if not name:
        raise bad("bad_name", "An entry has an empty name")
    if "\\" in name:
        raise bad("bad_name", "Entry names must not contain backslashes", name)
    if _CONTROL.search(name):
        raise bad("bad_name", "Entry names must not contain control characters", name.encode("unicode_escape").decode())
    if name.startswith("/"):
        raise bad("absolute_path", "Entry names must be relative paths", name)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise bad("parent_path", "Entry names must not contain '..'", name)
    path = "/".join(parts)
    if len(path.encode()) > MAX_PATH_BYTES or any(len(p.encode()) > MAX_COMPONENT_BYTES for p in parts):
        raise bad("bad_name", "An entry name is too long", name[:100] + "...")
    return path


def _pax_records(data: bytes) -> dict[str, str]:
    """Parse 'LEN key=value\\n' records; a malformed record is refused."""
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        if not data[pos:].strip(b"\0"):
            break
        space = data.find(b" ", pos, pos + 20)
        length_text = data[pos:space] if space > pos else b""
        if not length_text.isdigit():
            raise bad("corrupt_tar", "A pax header is malformed")
        length = int(length_text)
        record = data[pos:pos + length]
        if length <= len(length_text) + 1 or len(record) != length or not record.endswith(b"\n"):
            raise bad("corrupt_tar", "A pax header is malformed")
        key_bytes, eq, value = record[space - pos + 1:-1].partition(b"=")
        if not eq:
            raise bad("corrupt_tar", "A pax header is malformed")
        try:
            key, text = key_bytes.decode("utf-8"), value.decode("utf-8")
        except UnicodeDecodeError:
            raise bad("bad_name", "A pax header is not UTF-8") from None
        if key in records and key in ("path", "size"):
            raise bad("corrupt_tar", f"A pax header sets {key} twice")
        records[key] = text
        pos += length
    return records


def _checksum_ok(block: bytes) -> bool:
    field = block[148:156]
    if not field.strip(b"\0 "):
        return False
    stored = _number(field)
    unsigned = sum(block[:148]) + 256 + sum(block[156:])
    if stored == unsigned:
        return True
    # Some old tars summed signed bytes.
    high = sum(b for b in block[:148] if b > 127) + sum(b for b in block[156:] if b > 127)
    return stored == unsigned - 2 * high


def parse_manifest(data: bytes) -> dict[str, Any]:
    def refuse_constant(name: str) -> Any:
        raise ValueError(name)

    def finite_float(text: str) -> float:
        value = float(text)  # 1e999 reads as inf: no JSON store (PostgreSQL's jsonb) accepts it
        if not math.isfinite(value):
            raise ValueError(text)
        return value

    try:
        manifest = json.loads(data.decode("utf-8"), parse_constant=refuse_constant, parse_float=finite_float)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad("bad_manifest", "svc.json is not valid JSON") from None
    if not isinstance(manifest, dict):
        raise bad("bad_manifest", "svc.json must hold a JSON object")
    try:
        # Stored as JSON text on both stores: no NUL, no lone surrogate.
        if "\\u0000" in json.dumps(manifest, ensure_ascii=False).encode("utf-8").decode():
            raise bad("bad_manifest", "svc.json must not contain NUL characters")
    except UnicodeEncodeError:
        raise bad("bad_manifest", "svc.json holds an invalid unicode escape") from None
    return manifest


class Extractor:
    """Feed the gzipped tar in chunks (`feed`), then `finish()`. Any problem raises BadBundle or
    BundleTooLarge; after that the extractor is dead (every call raises the same error) and the
    caller removes `dest`."""

    def __init__(self, dest: Path, limits: Limits) -> None:
        self.dest = str(dest)
        self.limits = limits
        self._error: Exception | None = None
        self._z: Any = None  # zlib.Decompress of the current gzip member
        self._members = 0
        self._inflated = 0
        self._state = _HEADER
        self._header = bytearray()
        self._remaining = 0  # bytes of the current file data, padding or meta body still to come
        self._fd = -1
        self._meta = bytearray()
        self._meta_kind = 0
        self._pax: dict[str, str] | None = None
        self._longname: str | None = None
        self._manifest = bytearray()
        self._kinds: dict[str, str] = {"": "d"}  # path -> "f" file, "d" directory, "i" implied directory
        self._files: list[str] = []
        self._member_head = b""  # the first bytes of the current gzip member
        self._pad_after = 0  # padding after the current file data or meta body
        self._in_manifest = False
        self._manifest_bytes: bytes | None = None
        self._entries = 0
        self._headers = 0
        self._dirs = 0
        self._unpacked = 0

    # -- input ------------------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._error is not None:
            raise self._error
        try:
            self._inflate(data)
        except Exception as e:
            self._fail(e)
            raise

    def finish(self) -> Unpacked:
        if self._error is not None:
            raise self._error
        try:
            return self._finish()
        except Exception as e:
            self._fail(e)
            raise

    def close(self) -> None:
        """Release the open file, if any (after a failure, or when abandoning the extraction)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _fail(self, e: Exception) -> None:
        self._error = e
        self.close()

    # -- gzip -------------------------------------------------------------------------------------

    def _inflate(self, data: bytes | bytearray | memoryview) -> None:
        while True:
            if self._z is None:
                self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._member_head = b""
            z = self._z
            if len(self._member_head) < 2:
                self._member_head += bytes(data[:2 - len(self._member_head)])
            try:
                out = z.decompress(data, _INFLATE_STEP)
            except zlib.error:
                if not b"\x1f\x8b".startswith(self._member_head):
                    if self._members == 0:
                        raise bad("not_gzip", "The upload is not a gzip-compressed file: a bundle is a "
                                  ".tar.gz") from None
                    raise bad("trailing_data", "The body has data after the end of the gzip stream") from None
                raise bad("corrupt_gzip", "The gzip data is corrupt") from None
            if out:
                self._tar(out)
            if z.eof:
                self._members += 1
                data = z.unused_data
                self._z = None
                if not data:
                    return
                continue
            data = z.unconsumed_tail
            if not data and len(out) < _INFLATE_STEP:
                return

    # -- tar --------------------------------------------------------------------------------------

    def _tar(self, chunk: bytes) -> None:
        if self._inflated == 0 and chunk[:2] == b"\x1f\x8b":
            raise bad("corrupt_tar", "The gzip data holds gzip data, not a tar archive (compressed twice?)")
        self._inflated += len(chunk)
        if self._inflated > self.limits.inflated:
            raise too_large("unpacked", self.limits.unpacked)
        view = memoryview(chunk)
        pos, end = 0, len(chunk)
        while pos < end:
            state = self._state
            if state == _DATA:
                take = min(self._remaining, end - pos)
                self._write(view[pos:pos + take])
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    self._end_file()
            elif state == _HEADER:
                if not self._header and end - pos >= _BLOCK:
                    block = chunk[pos:pos + _BLOCK]
                    pos += _BLOCK
                else:
                    take = min(_BLOCK - len(self._header), end - pos)
                    self._header += view[pos:pos + take]
                    pos += take
                    if len(self._header) < _BLOCK:
                        continue
                    block = bytes(self._header)
                    self._header.clear()
                self._entry(block)
            elif state == _PAD:
                take = min(self._remaining, end - pos)
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    self._state = _HEADER
            elif state == _META:
                take = min(self._remaining, end - pos)
                self._meta += view[pos:pos + take]
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    self._end_meta()
            else:  # _END: only zero padding may follow the end-of-archive block
                whole_step = pos == 0 and end == _INFLATE_STEP
                if not (chunk == _ZERO_STEP if whole_step else chunk.count(0, pos) == end - pos):
                    raise bad("trailing_data", "The tar archive has data after its end")
                return

    def _entry(self, block: bytes) -> None:
        if block == _ZERO_BLOCK:
            if self._pax is not None or self._longname is not None:
                raise bad("corrupt_tar", "The tar archive ends inside an entry")
            self._state = _END
            return
        if not _checksum_ok(block):
            raise bad("corrupt_tar", "A tar header is corrupt (checksum mismatch): not a tar archive?")
        self._headers += 1
        if self._headers > 3 * self.limits.entries + 16:  # extended headers: a few per entry at most
            raise too_large("entries", self.limits.entries)
        kind = block[156]
        size = _number(block[124:136])
        if kind in (_PAX, _PAX_GLOBAL, _LONGNAME):
            self._begin_meta(kind, size)
            return
        if kind in _LINKS:
            raise bad("link", "Links (symbolic or hard) are not allowed in a bundle", self._name(block, lenient=True))
        if kind in _SPECIAL:
            raise bad("special_file", "Device files and fifos are not allowed in a bundle",
                      self._name(block, lenient=True))
        if kind not in _REGULAR and kind != _DIRECTORY:
            raise bad("unsupported_entry", f"Tar entries of type {chr(kind)!r} are not supported",
                      self._name(block, lenient=True))
        raw_name = self._name(block)
        if self._pax is not None and "size" in self._pax:
            size_text = self._pax["size"]
            if not size_text.isdigit():
                raise bad("corrupt_tar", "A pax size is not a number")
            size = int(size_text)
        self._pax = None
        self._longname = None
        self._entries += 1
        if self._entries > self.limits.entries:
            raise too_large("entries", self.limits.entries)
        # Old tars mark directories by a trailing slash on a type '\0' entry.
        if kind == _DIRECTORY or (kind == 0 and raw_name.endswith("/")):
            if size:
                raise bad("corrupt_tar", "A directory entry has data", raw_name)
            self._directory(normalize(raw_name), raw_name)
        else:
            self._file(normalize(raw_name), raw_name, size)

    def _name(self, block: bytes, *, lenient: bool = False) -> str:
        """The entry's name: a pax path, else a GNU long name, else the header's (ustar prefix/)name.
        A header's own name field is not read when replaced (it may be cut inside a character)."""
        if self._pax is not None and "path" in self._pax:
            return self._pax["path"]
        if self._longname is not None:
            return self._longname
        try:
            name = _text(block[0:100], "name")
            if block[257:265] == b"ustar\x0000":
                prefix = _text(block[345:500], "name")
                if prefix:
                    name = f"{prefix}/{name}"
        except BadBundle:
            if lenient:
                return "?"
            raise
        return name

    def _begin_meta(self, kind: int, size: int) -> None:
        cap = MAX_LONGNAME_BYTES if kind == _LONGNAME else MAX_PAX_BYTES
        if size > cap:
            raise bad("bad_name" if kind == _LONGNAME else "corrupt_tar",
                      f"A tar {'long name' if kind == _LONGNAME else 'pax header'} is over {cap} bytes")
        if (kind == _PAX and self._pax is not None) or (kind == _LONGNAME and self._longname is not None):
            raise bad("corrupt_tar", "Two extended headers for one entry")
        self._meta_kind = kind
        self._meta.clear()
        self._remaining = size
        self._pad_after = (-size) % _BLOCK
        self._state = _META if size else _HEADER
        if not size:
            self._end_meta()

    def _end_meta(self) -> None:
        data = bytes(self._meta)
        self._meta.clear()
        if self._meta_kind == _LONGNAME:
            self._longname = _text(data, "long name")
        else:
            records = _pax_records(data)
            if self._meta_kind == _PAX:
                if any(k.startswith("GNU.sparse") for k in records):
                    raise bad("unsupported_entry", "Sparse files are not supported")
                if "path" in records and "\x00" in records["path"]:
                    raise bad("bad_name", "A pax path holds a NUL character")
                self._pax = records
        self._after(self._pad_after)

    def _after(self, pad: int) -> None:
        self._remaining = pad
        self._state = _PAD if pad else _HEADER

    # -- files ------------------------------------------------------------------------------------

    def _parents(self, path: str, raw: str) -> None:
        """Check the parent directories of `path`, creating the implied ones."""
        slash = path.find("/")
        while slash != -1:
            parent = path[:slash]
            kind = self._kinds.get(parent)
            if kind is None:
                os.mkdir(f"{self.dest}/{parent}", 0o755)
                self._kinds[parent] = "i"
            elif kind == "f":
                raise bad("duplicate", "An entry is both a file and a directory", raw)
            slash = path.find("/", slash + 1)

    def _directory(self, path: str, raw: str) -> None:
        if path == "":
            return  # "./" itself
        kind = self._kinds.get(path)
        if kind is not None and kind != "i":
            raise bad("duplicate", "The bundle has the same path twice", raw)
        self._parents(path, raw)
        if kind is None:
            os.mkdir(f"{self.dest}/{path}", 0o755)
        self._kinds[path] = "d"
        self._dirs += 1

    def _file(self, path: str, raw: str, size: int) -> None:
        if path == "":
            raise bad("bad_name", "A file entry names the bundle's root", raw)
        if path in self._kinds:
            raise bad("duplicate", "The bundle has the same path twice", raw)
        self._unpacked += size
        if self._unpacked > self.limits.unpacked:
            raise too_large("unpacked", self.limits.unpacked)
        if path == MANIFEST:
            if size > MAX_MANIFEST_BYTES:
                raise bad("bad_manifest", f"svc.json is over {MAX_MANIFEST_BYTES} bytes")
            self._in_manifest = True
        self._parents(path, raw)
        self._kinds[path] = "f"
        self._files.append(path)
        self._fd = os.open(f"{self.dest}/{path}", _FILE_FLAGS, 0o644)
        self._remaining = size
        self._pad_after = (-size) % _BLOCK
        self._state = _DATA
        if size == 0:
            self._end_file()

    def _write(self, data: memoryview) -> None:
        if self._in_manifest:
            self._manifest += data
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def _end_file(self) -> None:
        os.close(self._fd)
        self._fd = -1
        if self._in_manifest:
            self._manifest_bytes = bytes(self._manifest)
            self._in_manifest = False
        self._after(self._pad_after)

    # -- end --------------------------------------------------------------------------------------

    def _finish(self) -> Unpacked:
        if self._z is None and self._members == 0:
            raise bad("not_gzip", "The body is empty: it must be the gzipped tar")
        if self._z is not None:
            raise bad("truncated", "The gzip stream is truncated")
        if self._state != _END:
            raise bad("truncated", "The tar archive is truncated (no end-of-archive block)")
        if self._manifest_bytes is None:
            raise bad("missing_manifest", "The bundle has no svc.json at its root")
        manifest = parse_manifest(self._manifest_bytes)
        return Unpacked(manifest=manifest, file_count=len(self._files), dir_count=self._dirs,
                        unpacked_bytes=self._unpacked, files=self._files)
