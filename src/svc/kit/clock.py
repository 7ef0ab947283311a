"""Time in one place: aware UTC datetimes, RFC 3339 'Z' rendering."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def rfc3339(value: datetime) -> str:
    return as_utc(value).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# English names, whatever the process's locale (strftime's %A and %B follow it).
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def human_date(when: datetime) -> str:
    """'Tuesday 1 December 2026, 14:05 UTC'."""
    t = as_utc(when)
    return f"{_DAYS[t.weekday()]} {t.day} {_MONTHS[t.month - 1]} {t.year}, {t:%H:%M} UTC"


def duration(seconds: float) -> str:
    """A length of time as people say it, rounded to its largest unit: 'less than a minute',
    '1 minute', '5 hours', '6 days'."""
    seconds = abs(seconds)
    if seconds < 60:
        return "less than a minute"
    for unit, size, below in (("minute", 60, 60), ("hour", 3600, 24)):
        n = round(seconds / size)
        if n < below:
            return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
    n = round(seconds / 86400)
    return f"{n} day" if n == 1 else f"{n} days"


def relative(when: datetime, now: datetime) -> str:
    """'in 6 days' or '2 hours ago'."""
    left = (as_utc(when) - as_utc(now)).total_seconds()
    return f"in {duration(left)}" if left >= 0 else f"{duration(left)} ago"
