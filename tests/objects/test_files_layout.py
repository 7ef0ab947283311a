"""The files backend's names: a key's file is its own even on a file system that folds case."""

from __future__ import annotations

import hashlib
from pathlib import Path

from svc.adapters.objects.files import FileObjectStore
from tests.objects.test_store_contract import get_bytes, put


async def test_keys_that_differ_only_in_case_never_share_a_name_even_folded(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path / "objects")
    long = "L" * 300  # named by its sha256: a short segment spelling that hash must not meet it
    keys = ["p/a/Key", "p/a/key", "p/a/KEY", "p/a/é", "p/a/%C3%A9", "p/a/%c3%a9", f"p/a/{long}/x",
            f"p/a/{hashlib.sha256(long.encode()).hexdigest()}/x", f"p/a/{long}",
            f"p/a/{hashlib.sha256(long.encode()).hexdigest()}"]
    for key in keys:
        await put(store, key, key.encode())
    for key in keys:
        assert await get_bytes(store, key) == key.encode()
    names = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.name != ".segment"]
    assert len({n.casefold() for n in names}) == len(names), sorted(names)
