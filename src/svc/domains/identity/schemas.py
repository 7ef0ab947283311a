from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc import models
from svc.kit.api import ApiInput, ApiModel, Timestamp, trimmed


class DevLogin(ApiInput):
    subject: Annotated[str, StringConstraints(min_length=1, max_length=100), trimmed(1)]
    email: Annotated[str, StringConstraints(max_length=320, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] | None = None
    name: Annotated[str, StringConstraints(max_length=200)] | None = None


class Session(ApiModel):
    token: str
    expires_at: Timestamp
    user_id: str
    subject: str


class User(ApiModel):
    id: str
    provider: str
    subject: str
    email: str | None
    name: str | None


class OrgMembership(ApiModel):
    slug: str
    name: str
    role: str
    personal: bool
    plan: str
    project_limit: int

    @classmethod
    def of(cls, org: models.Org, role: str, project_limit: int) -> OrgMembership:
        return cls(slug=org.slug, name=org.name, role=role, personal=org.personal, plan=org.plan,
                   project_limit=project_limit)


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
