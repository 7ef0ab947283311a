"""What both backends do alike: check a key (what S3 takes) and a byte range (as HTTP reads
one), count a prefix's usage."""

from __future__ import annotations

from collections.abc import Iterable

from svc.adapters.objects.port import RangeNotSatisfiable

_KEY_MAX = 1024


def check_key(key: str) -> bytes:
    """The key's UTF-8 (1-1024 bytes, as S3 takes)."""
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("an object key is UTF-8") from None
    if not 1 <= len(raw) <= _KEY_MAX:
        raise ValueError(f"an object key is 1-{_KEY_MAX} bytes, not {len(raw)}")
    return raw


def byte_range(size: int, start: int | None, end: int | None) -> tuple[int, int]:
    """The inclusive [start, end] of an object of `size` bytes that the port's range asks for."""
    if start is None and end is None:
        return 0, size - 1
    if start is None:
        assert end is not None
        if end < 0:
            raise ValueError("a suffix range is a length of 0 or more")
        if end == 0 or size == 0:
            raise RangeNotSatisfiable(size)
        return max(0, size - end), size - 1
    if start < 0 or (end is not None and end < start):
        raise ValueError(f"not a byte range: {start}-{'' if end is None else end}")
    if start >= size:
        raise RangeNotSatisfiable(size)
    return start, size - 1 if end is None else min(end, size - 1)


def tally(sizes: Iterable[int]) -> tuple[int, int]:
    """(bytes, objects) of the objects of these sizes."""
    total = count = 0
    for size in sizes:
        total += size
        count += 1
    return total, count
