"""Email's bodies (decisions.md, "Email": EmailStatus, the log page, MailLogEntry)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from svc.kit.api import ApiInput, ApiModel, Timestamp
from svc.kit.cursors import Cursor

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class EmailStatus(ApiModel):
    granted: bool
    address: str = Field(description="The project's mail domain (any local part): the one it has, or the one a "
                                     "grant would fix now")
    sender: str = Field(description="The From address of mail the project sends unless it names another local part")
    hourly_cap: int = Field(description="Messages the project may send an hour (its org's plan)")
    sent24h: int = Field(alias="sent24h", description="Messages sent in the last 24 hours")
    received24h: int = Field(alias="received24h", description="Messages received in the last 24 hours")


class MailLogEntry(ApiModel):
    id: str
    direction: Literal["in", "out"]
    from_: str = Field(alias="from")
    to: str = Field(description="The envelope's recipients, comma-separated")
    subject: str
    outcome: str = Field(description="received, handled, worker_rejected, queued, sent, delivered, bounced, "
                                     "complained, failed or suppressed")
    size: int = Field(description="Bytes of the raw message")
    spf: str | None = Field(description="Received mail: the sender's SPF result (pass, fail, softfail, neutral, "
                                        "none, temperror, permerror); sent mail: null")
    has_raw: bool = Field(description="false: GET .../raw answers 404")
    created_at: Timestamp


class MailLogPage(ApiModel):
    entries: list[MailLogEntry]
    next_cursor: str | None = Field(description="The next page's `cursor`; null at the end")


class MailLogQuery(ApiInput):
    """GET .../email/log's query parameters."""

    # An unknown parameter is refused by the route (svc.deps): never silently ignored.
    model_config = ConfigDict(extra="ignore")

    direction: Literal["in", "out", ""] = Field(default="", description="in, out, or empty for both")
    cursor: Cursor | None = Field(default=None, description="A nextCursor: the messages older than those listed")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Page size")
