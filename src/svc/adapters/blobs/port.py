from __future__ import annotations

from pathlib import Path
from typing import Protocol


class BlobMissing(Exception):
    """No object under that key."""


class BlobStore(Protocol):
    """Keys are content addresses (e.g. 'bundles/sha256/<hex>.tar.gz'): writing the same key twice
    writes the same bytes, so put is idempotent and readers never see a partial object."""

    description: str

    async def put_file(self, key: str, path: Path) -> None: ...

    async def exists(self, key: str) -> bool: ...

    async def get_to_file(self, key: str, dest: Path) -> None:
        """Write the object to `dest` (complete or not at all); raise BlobMissing."""
        ...

    async def delete(self, key: str) -> None:
        """Idempotent."""
        ...

    def sweep_partials(self) -> int:
        """Remove what writers killed mid-write left behind (blocking; run at start); how many."""
        ...
