"""Time in one place: aware UTC datetimes, RFC 3339 'Z' rendering."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def rfc3339(value: datetime) -> str:
    return as_utc(value).isoformat(timespec="milliseconds").replace("+00:00", "Z")
