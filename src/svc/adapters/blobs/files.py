"""Blobs as files under a directory (SVC_DATA_DIR/blobs by default).

An object is written to a temporary file beside its final place, flushed to disk and renamed
into place, so a reader sees it complete or not at all. Temporary names carry the writer's pid
and a per-process token; `sweep_partials` removes those a dead (or earlier) process left."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from svc.adapters.blobs.port import BlobMissing
from svc.kit.files import fsync_dir, partial_name, remove_path, sweep_stale

_TMP = ".tmp"


def _check_key(key: str) -> None:
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise ValueError(f"not a blob key: {key!r}")


class FileBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.description = f"files under {root}"

    def _path(self, key: str) -> Path:
        _check_key(key)
        return self.root / key

    async def put_file(self, key: str, path: Path) -> None:
        await asyncio.to_thread(self._put, self._path(key), path)

    def _put(self, dest: Path, source: Path) -> None:
        if dest.exists():
            return  # content-addressed: the same key holds the same bytes
        tmp_dir = self.root / _TMP
        tmp_dir.mkdir(parents=True, exist_ok=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = tmp_dir / partial_name("put")
        try:
            try:
                os.link(source, tmp)  # same file system: no copy
            except OSError:
                shutil.copyfile(source, tmp)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, dest)
            fsync_dir(dest.parent)
        finally:
            remove_path(tmp)

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self._path(key).is_file)

    async def get_to_file(self, key: str, dest: Path) -> None:
        await asyncio.to_thread(self._get, self._path(key), dest)

    def _get(self, source: Path, dest: Path) -> None:
        tmp = dest.with_name(partial_name("get"))
        try:
            try:
                shutil.copyfile(source, tmp)
            except FileNotFoundError:
                raise BlobMissing(str(source.relative_to(self.root))) from None
            os.replace(tmp, dest)
        finally:
            remove_path(tmp)

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(remove_path, self._path(key))

    def sweep_partials(self) -> int:
        """Remove temporary files that crashed writers left (blocking); returns how many."""
        return sweep_stale(self.root / _TMP, "put")
