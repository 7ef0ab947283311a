"""Email's bodies (decisions.md, "Email": EmailStatus, the log page, MailLogEntry)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from svc.kit.api import ApiInput, ApiModel, Timestamp, invalid
from svc.kit.cursors import Cursor

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

# A local part svc sends from (RFC 5322's dot-atom, ASCII): outbound.py and runtime.py decide by it.
LOCAL_PART = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
# What the document tells clients of a recipient; the service's check (email-validator) decides.
_ADDRESS = (r"^[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
            r"[A-Za-z]{2,24}$")
Address = Annotated[str, StringConstraints(min_length=6, max_length=254, pattern=_ADDRESS)]


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


class SendRequest(ApiInput):
    """POST .../email/send: a message from the project's address (at least one of text and html)."""

    # Stated for clients: a text or an html that is a string (null is as good as absent).
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"required": [part], "properties": {part: {"type": "string"}}} for part in ("text", "html")]})

    to: list[Address] = Field(min_length=1, max_length=50, description="Recipients' addresses, 1 to 50")
    subject: str = Field(max_length=400, pattern=r"^[^\r\n]*$", description="One line")
    text: str | None = Field(default=None, description="The plain-text body")
    html: str | None = Field(default=None, description="The HTML body")
    from_: str | None = Field(default=None, alias="from", max_length=64, pattern=LOCAL_PART.pattern,
                              description="The local part to send from at the project's address (default noreply)")
    reply_to: Address | None = Field(default=None, description="A Reply-To address")

    @model_validator(mode="after")
    def _a_body(self) -> SendRequest:
        if self.text is None and self.html is None:
            raise invalid("value_error", "text or html must be given")
        return self


class DnsRecord(ApiModel):
    name: str = Field(description="The owner name, absolute, without the trailing dot")
    type: Literal["MX", "TXT"]
    content: str = Field(description="The record's value as a DNS provider's form takes it (TXT unquoted)")


class MailRecords(ApiModel):
    """GET .../email/records (an addition to the spec): the mail domain's MX, SPF, DKIM and DMARC."""

    records: list[DnsRecord]
    published: bool = Field(description="true: svc serves them itself, in the zone named by `zone`; false: "
                                        "they are to be copied to the zone that serves the mail domain")
    zone: str | None = Field(default=None, description="The zone of svc holding them, when published")
