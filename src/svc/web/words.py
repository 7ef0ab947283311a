"""Every Error envelope the pages can meet, said to a person: a title for the page or the message
box, the error's own message (svc's messages are sentences already) and, where it helps, what to
do next. Never the raw JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.errors import AppError

TITLES = {
    400: "That did not work",
    401: "Sign-in needed",
    403: "Not allowed",
    404: "Not found",
    405: "Not allowed",
    409: "That cannot be done now",
    413: "Too large",
    415: "Not a bundle",
    429: "Too many tries",
    503: "Not available right now",
}

# What to do next, for the errors of the dashboard itself; each area declares the hints of its own
# error codes in its manifest (svc/manifest.py `hints`), merged by web/dashboard.py.
HINTS = {
    "csrf_failed": "Reload the page and send the form again.",
    "unauthorized": "Sign in again.",
    "forbidden": "Ask an admin of the org for a higher role.",
    "rate_limited": "Wait a moment before trying again.",
}


@dataclass(frozen=True)
class Said:
    title: str
    message: str
    hint: str | None
    status: int
    code: str
    holdings: dict[str, Any] = field(default_factory=dict)


def say(err: AppError, hints: Mapping[str, str]) -> Said:
    details = err.details or {}
    holdings = details.get("holdings") if err.code == "org_not_empty" else None
    return Said(title=TITLES.get(err.status, "Something went wrong on svc's side" if err.status >= 500
                                 else "That did not work"),
                message=err.message, hint=hints.get(err.code), status=err.status, code=err.code,
                holdings=holdings if isinstance(holdings, dict) else {})
