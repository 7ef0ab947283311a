"""Request and response bodies of the access policy API (schema names as in the spec)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc.kit.api import ApiInput, ApiModel
from svc.kit.hosts import MAX_HOST
from svc.kit.paths import MAX_NEXT
from svc.models import AccessMode, Project

PASSWORD_MIN = 8
PASSWORD_MAX = 256

Password = Annotated[str, StringConstraints(min_length=PASSWORD_MIN, max_length=PASSWORD_MAX)]


class AccessPolicy(ApiModel):
    """The project's policy; the password is write-only (only whether one is stored shows)."""

    @classmethod
    def of(cls, project: Project) -> AccessPolicy:
        return cls(mode=AccessMode(project.access_mode), has_password=project.access_password_hash is not None,
                   has_bypass=project.bypass_secret_hash is not None)

    mode: AccessMode
    has_password: bool
    has_bypass: bool


class AccessPolicyPut(ApiInput):
    mode: AccessMode
    password: Password | None = Field(
        default=None,
        description=f"{PASSWORD_MIN}-{PASSWORD_MAX} characters; required the first time mode password is set. "
                    "When omitted the stored password stays (also across switches to public or org).")


class AccessBypass(ApiModel):
    """Shown once: CI sends it as the Svc-Access-Bypass header. A new one invalidates the old."""

    secret: str


# The shapes the service takes (kit/hosts.normalize_host, kit/paths.safe_next), stated for clients;
# the service's checks decide and word the refusal (400), as before: a host of LDH labels in any
# case, with a trailing dot, a :port or surrounding whitespace ignored; a path with exactly one
# leading '/', in printable ASCII without backslash.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
TO_PATTERN = rf"^\s*{_LABEL}(?:\.{_LABEL})*\.?(?::[^:]*)?\s*$"
NEXT_PATTERN = r"^/(?:[\x21-\x2e\x30-\x5b\x5d-\x7e][\x21-\x5b\x5d-\x7e]*)?$"


class AccessAuthorizeRequest(ApiInput):
    to: Annotated[str, StringConstraints(min_length=1, max_length=MAX_HOST)] = Field(
        json_schema_extra={"pattern": TO_PATTERN},
        description="The project hostname the browser wants to reach (a host svc serves no project at: 404)")
    next: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NEXT)] = Field(
        json_schema_extra={"pattern": NEXT_PATTERN},
        description="The path (with query) to return to on that host: one leading '/', printable ASCII, "
                    "no backslash")


class AccessAuthorize(ApiModel):
    """Where to send the browser: the host's /__svc/callback with a one-time code (60 s)."""

    redirect: str
