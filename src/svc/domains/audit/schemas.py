"""The audit list's query and answer (decisions.md, "Audit list")."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints

from svc import models
from svc.kit.api import ApiInput, ApiModel, Timestamp, invalid
from svc.kit.cursors import Cursor

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

# An event name ("member.add", "access.bypass.new") or a prefix of whole segments ending in "." ("member.").
_ACTION = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.?")


def _action(value: str) -> str:
    if not _ACTION.fullmatch(value):
        raise invalid("value_error", "must be an event name (member.add) or a prefix ending in a dot (member.)")
    return value


class AuditQuery(ApiInput):
    """The filters and page of GET /v1/orgs/{org}/audit (query parameters), and of the dashboard's page."""

    # An unknown parameter is refused by the route (svc.deps): never silently ignored.
    model_config = ConfigDict(extra="ignore")

    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Page size")
    cursor: Cursor | None = Field(default=None, description="A nextCursor: the events older than those already listed")
    before: Cursor | None = Field(default=None, description="The same as cursor (its earlier name)")
    # The pattern is _action's rule, stated for clients; _action decides and words the refusal.
    action: Annotated[str, StringConstraints(min_length=1, max_length=64), AfterValidator(_action)] | None = Field(
        default=None, json_schema_extra={"pattern": f"^{_ACTION.pattern}$"},
        description="An event name (exact, e.g. member.add), or a prefix ending in '.' "
                    "(e.g. member.) for every event under it")
    actor: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        default=None, description="The actor as listed (provider:subject, e.g. github:octocat)")


class AuditEvent(ApiModel):
    id: str
    at: Timestamp
    actor: str | None = Field(description="provider:subject of who did it (operator:NAME: the operator at the "
                       "server); null for the system")
    action: str = Field(description="The event's name, as the spec lists them (member.add, secret.set, ...)")
    target: str | None = Field(description="What it acted on: a project, user id, invite id, org slug ...")
    request_id: str | None = Field(description="Not recorded yet: always null")
    ip: str | None = Field(description="Not recorded yet: always null")
    user_agent: str | None = Field(description="Not recorded yet: always null")
    payload: dict[str, Any] = Field(description="What the event recorded: names, ids, versions; never a secret")

    @classmethod
    def of(cls, row: models.AuditEvent) -> AuditEvent:
        """The listed event. The request's id, address and user agent are not recorded (yet): null."""
        return cls(id=row.id, at=row.at, actor=row.actor_subject, action=row.action, target=row.target,
                   request_id=None, ip=None, user_agent=None, payload=dict(row.data or {}))


class AuditEventList(ApiModel):
    events: list[AuditEvent]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next (older) page; null at the end")
