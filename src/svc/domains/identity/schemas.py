from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc.domains.orgs.schemas import OrgMembership, User
from svc.kit.api import ApiInput, ApiModel, Timestamp, trimmed

__all__ = ["Config", "DevLogin", "Me", "OrgMembership", "Session", "User"]


class DevLogin(ApiInput):
    subject: Annotated[str, StringConstraints(min_length=1, max_length=100), trimmed(1)]
    email: Annotated[str, StringConstraints(max_length=320, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] | None = None
    name: Annotated[str, StringConstraints(max_length=200)] | None = None


class Session(ApiModel):
    token: str
    expires_at: Timestamp
    user_id: str
    subject: str


# A user and their orgs (the views are the orgs area's: a member is a user).
class Me(ApiModel):
    user: User
    orgs: list[OrgMembership]


class Config(ApiModel):
    """Names of this deployment only: no feature on/off state."""

    service_name: str
    public_url: str
    api_url: str
    app_domain: str
    identity_provider: str | None = Field(description="Name of the login provider, the {idp} path segment")
    ssh_port: int | None = Field(default=None, description="The port of git over SSH (null: this svc serves git "
                                                           "over HTTPS only)")
    # decisions.md: absent (not null) when inbound mail is off.
    smtp_port: int | None = Field(default=None, exclude_if=lambda v: v is None,
                                  description="The port svc receives the projects' mail on (absent: no inbound mail)")
