"""Bundles for the tests, good and hostile, built in memory (or streamed, for the big ones)."""

from __future__ import annotations

import gzip
import io
import json
import random
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

BLOCK = 512


def gz(data: bytes, *, level: int = 6) -> bytes:
    return gzip.compress(data, compresslevel=level, mtime=0)


def tar_bytes(entries: Iterable[tuple[tarfile.TarInfo, bytes | None]], *,
              fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def file_info(name: str, data: bytes, *, kind: bytes = tarfile.REGTYPE) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = 1_700_000_000
    info.type = kind
    return info, data


def dir_info(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info, None


def manifest(data: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"name": "site"} if data is None else data).encode()


def site(files: dict[str, bytes] | None = None, *, svc_json: dict[str, Any] | None = None,
         fmt: int = tarfile.PAX_FORMAT, level: int = 6) -> bytes:
    """A valid bundle: svc.json plus `files` (default: a small static site under assets/)."""
    files = files if files is not None else {
        "assets/index.html": b"<!doctype html><h1>hello</h1>\n",
        "assets/css/site.css": b"body { color: #333 }\n",
    }
    entries: list[tuple[tarfile.TarInfo, bytes | None]] = [file_info("svc.json", manifest(svc_json))]
    entries += [file_info(name, data) for name, data in files.items()]
    return gz(tar_bytes(entries, fmt=fmt), level=level)


def header(name: bytes, *, size: int = 0, kind: bytes = b"0", linkname: bytes = b"", prefix: bytes = b"",
           magic: bytes = b"ustar\x0000", mode: bytes = b"0000644\x00", size_field: bytes | None = None,
           checksum: bytes | None = None) -> bytes:
    """One raw 512-byte ustar header, with the fields given verbatim (to build what tarfile refuses to)."""
    block = bytearray(BLOCK)
    block[0:100] = name[:100].ljust(100, b"\0")
    block[100:108] = mode
    block[108:116] = b"0000000\x00"
    block[116:124] = b"0000000\x00"
    block[124:136] = size_field if size_field is not None else f"{size:011o}\x00".encode()
    block[136:148] = b"14567227400\x00"
    block[148:156] = b" " * 8
    block[156:157] = kind
    block[157:257] = linkname[:100].ljust(100, b"\0")
    block[257:265] = magic
    block[345:500] = prefix[:155].ljust(155, b"\0")
    block[148:156] = checksum if checksum is not None else f"{sum(block):06o}\x00 ".encode()
    return bytes(block)


def member(name: bytes, data: bytes = b"", **kw: Any) -> bytes:
    """A raw header and its padded data."""
    return header(name, size=len(data), **kw) + pad(data)


def pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK)


def pax(records: dict[str, str | bytes], *, kind: bytes = b"x") -> bytes:
    body = b""
    for key, value in records.items():
        raw = value if isinstance(value, bytes) else value.encode()
        payload = b" " + key.encode() + b"=" + raw + b"\n"
        length = len(payload) + 1
        while len(str(length)) + len(payload) != length:
            length = len(str(length)) + len(payload)
        body += str(length).encode() + payload
    return member(b"././@PaxHeader", body, kind=kind)


END = bytes(2 * BLOCK)


def raw_bundle(*members: bytes, manifest_first: bool = True, end: bytes = END) -> bytes:
    """A gzipped tar made of raw members (a valid svc.json first unless told otherwise)."""
    head = member(b"svc.json", manifest()) if manifest_first else b""
    return gz(head + b"".join(members) + end)


@dataclass
class Stream:
    """A body produced chunk by chunk (never whole in memory), counting what it has handed out."""

    chunks: Iterable[bytes]
    sent: int = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.sent += len(chunk)
            yield chunk

    async def aiter(self) -> Any:
        for chunk in self:
            yield chunk


def gzip_stream(parts: Iterable[bytes], *, level: int = 1) -> Iterator[bytes]:
    """Compress `parts` as one gzip member, yielding compressed chunks as they come."""
    z = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for part in parts:
        out = z.compress(part)
        if out:
            yield out
    yield z.flush()


def zeros(total: int, chunk: int = 1024 * 1024) -> Iterator[bytes]:
    block = bytes(chunk)
    while total > 0:
        yield block[:min(chunk, total)]
        total -= chunk


def bomb(prefix: bytes, zero_bytes: int, *, unit: int = 1024 * 1024) -> Iterator[bytes]:
    """A valid gzip stream of `prefix` followed by `zero_bytes` zeros, produced without compressing
    them: after a full flush, each MiB of zeros compresses to the same ~1 KB, so 1 GiB is ~1 MB of
    repeated bytes. The trailer's CRC is computed only if a reader gets that far."""
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    yield c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    block = bytes(unit)
    repeated = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    count, rest = divmod(zero_bytes, unit)
    for _ in range(count):
        yield repeated
    yield c.compress(block[:rest]) + c.flush()
    crc = zlib.crc32(prefix)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(block[:rest], crc)
    yield (crc & 0xFFFFFFFF).to_bytes(4, "little") + ((len(prefix) + zero_bytes) & 0xFFFFFFFF).to_bytes(4, "little")


def big_site(files: int, file_size: int, *, seed: int = 1, level: int = 0,
             chunk: int = 64 * 1024) -> Iterator[bytes]:
    """A valid bundle of `files` random files, generated and compressed as it is read: the test
    never holds it whole either."""
    rnd = random.Random(seed)

    def tar_parts() -> Iterator[bytes]:
        body = manifest()
        yield header(b"svc.json", size=len(body)) + pad(body)
        for i in range(files):
            yield header(f"assets/f{i:04d}.bin".encode(), size=file_size)
            left = file_size
            while left > 0:
                n = min(chunk, left)
                yield rnd.randbytes(n)
                left -= n
            yield bytes(-file_size % BLOCK)
        yield END

    for out in gzip_stream(tar_parts(), level=level):
        for i in range(0, len(out), chunk):
            yield out[i:i + chunk]
