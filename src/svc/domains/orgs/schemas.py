from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc import models
from svc.kit.api import ApiInput, ApiModel, Timestamp, trimmed
from svc.kit.names import OrgSlug
from svc.models.states import Role

DisplayName = Annotated[str, StringConstraints(min_length=1, max_length=100), trimmed(1)]


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


class OrgCreate(ApiInput):
    slug: OrgSlug
    name: DisplayName | None = None


class OrgPatch(ApiInput):
    name: DisplayName


class OrgDelete(ApiInput):
    # Equality with the path's slug is a rule no schema can state: said in words, checked by the service.
    confirm: Annotated[str, StringConstraints(max_length=200)] = Field(
        description="The org's slug, typed again (surrounding whitespace ignored); anything else: 400")


class Org(ApiModel):
    slug: str
    name: str
    personal: bool
    plan: str
    created_at: Timestamp


class OrgList(ApiModel):
    orgs: list[OrgMembership]


class Member(ApiModel):
    user: User
    role: Role
    joined_at: Timestamp


class MemberList(ApiModel):
    members: list[Member]


class MemberAdd(ApiInput):
    provider: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    subject: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    role: Role


class MemberRole(ApiInput):
    role: Role
