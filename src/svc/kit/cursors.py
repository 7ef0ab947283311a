"""The cursor of a list paged newest first by (instant, id): the audit trail, the mail log. Opaque
to clients (decisions.md: a page's `nextCursor`, taken back as `cursor`)."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

from svc.kit.api import invalid

MAX_CURSOR = 120


def encode_cursor(at: datetime, row_id: str) -> str:
    """Where the next page starts: the last row's instant (microseconds) and id."""
    micros = int(at.timestamp()) * 1_000_000 + at.microsecond
    return base64.urlsafe_b64encode(f"{micros}:{row_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str] | None:
    """(instant, id) from a nextCursor, or None for a value this list did not hand out."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        return None
    micros, _, row_id = text.partition(":")
    if not micros.isdigit() or not row_id or len(micros) > 18:
        return None
    seconds, rest = divmod(int(micros), 1_000_000)
    try:
        return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest), row_id
    except (OverflowError, OSError, ValueError):
        return None


def _cursor(value: str) -> str:
    if decode_cursor(value) is None:
        raise invalid("value_error", "is not a nextCursor of this list")
    return value


# A query parameter holding a nextCursor: anything else is refused as 400, naming the parameter.
Cursor = Annotated[str, StringConstraints(min_length=1, max_length=MAX_CURSOR), AfterValidator(_cursor)]
