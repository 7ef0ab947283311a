from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc.domains.credentials.sshkeys import MAX_KEY_TEXT, PUBLIC_KEY_FORMAT, PUBLIC_KEY_PATTERN
from svc.kit.api import WHOLE_NUMBER, ApiInput, ApiModel, Timestamp, trimmed
from svc.kit.names import OrgSlug, ProjectName

CredentialName = Annotated[str, StringConstraints(min_length=1, max_length=100), trimmed(1)]


class TokenProjectRef(ApiInput):
    """The one project a new token may act on."""

    org: OrgSlug = Field(description="The project's org (its slug); you must be a member of it, in any role")
    name: ProjectName = Field(description="The project's name in that org")


class AccessTokenCreate(ApiInput):
    name: CredentialName
    expires_in_days: Annotated[int, Field(ge=1, le=3650, strict=True), WHOLE_NUMBER] | None = Field(
        default=None, description="Days until the token stops working; omitted or null: it never expires")
    project: TokenProjectRef | None = Field(
        default=None,
        description="Limit the token to one project, e.g. {\"org\": \"acme\", \"name\": \"web\"}: it can then "
                    "change only that project (under /v1/orgs/{org}/projects/{name}), read its org (the org, its "
                    "project list) and your own account (/v1/me), and nothing of any other project or org "
                    "(403 token_project_limited). A project that does not exist, or whose org you are not a "
                    "member of: 404. Omitted or null: every project you can reach")
    read_only: Annotated[bool, Field(strict=True)] = Field(
        default=False,
        description="true: the token can only read (GET, HEAD, OPTIONS); any other request is refused with 403 "
                    "token_read_only. Default false")


class TokenProject(ApiModel):
    """The project a token is limited to."""

    org: str = Field(description="The org's slug")
    name: str = Field(description="The project's name")


class AccessToken(ApiModel):
    """A personal access token as listed: never the token or its hash."""

    id: str
    name: str
    hint: str = Field(description="The first characters of the token, to tell tokens apart, e.g. 'svc_pat_AbCd…'")
    created_at: Timestamp
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    last_used_at: Timestamp | None = Field(description="Not tracked yet: always null")
    project: TokenProject | None = Field(
        description="The one project the token is limited to (as it is named now), or null: not limited to a project")
    read_only: bool = Field(description="true: the token can only read")


class AccessTokenCreated(AccessToken):
    token: str = Field(description="The plaintext token (svc_pat_...); shown only in this response")


class AccessTokenList(ApiModel):
    tokens: list[AccessToken]


class SSHKeyCreate(ApiInput):
    name: CredentialName
    # The pattern and format are stated for clients; sshkeys.parse_public_key decides and words the refusal.
    public_key: Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY_TEXT)] = Field(
        json_schema_extra={"pattern": PUBLIC_KEY_PATTERN, "format": PUBLIC_KEY_FORMAT},
        description="One line in OpenSSH format ('ssh-ed25519 AAAA... comment'): ssh-ed25519, "
                    "ecdsa-sha2-nistp256/384/521 or ssh-rsa of 2048 bits or more; the comment is dropped")


class SSHKey(ApiModel):
    id: str
    name: str
    type: str = Field(description="ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa")
    bits: int
    fingerprint: str = Field(description="SHA256:<base64 without padding>, as `ssh-keygen -lf` prints it")
    public_key: str = Field(description="'<type> <base64>', without the comment")
    created_at: Timestamp


class SSHKeyList(ApiModel):
    ssh_keys: list[SSHKey]
