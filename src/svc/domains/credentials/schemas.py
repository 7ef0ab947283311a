from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc.domains.credentials.sshkeys import MAX_KEY_TEXT, PUBLIC_KEY_FORMAT, PUBLIC_KEY_PATTERN
from svc.kit.api import WHOLE_NUMBER, ApiInput, ApiModel, Timestamp, trimmed

CredentialName = Annotated[str, StringConstraints(min_length=1, max_length=100), trimmed(1)]


class AccessTokenCreate(ApiInput):
    name: CredentialName
    expires_in_days: Annotated[int, Field(ge=1, le=3650, strict=True), WHOLE_NUMBER] | None = Field(
        default=None, description="Days until the token stops working; omitted or null: it never expires")


class AccessToken(ApiModel):
    """A personal access token as listed: never the token or its hash."""

    id: str
    name: str
    hint: str = Field(description="The first characters of the token, to tell tokens apart, e.g. 'svc_pat_AbCd…'")
    created_at: Timestamp
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    last_used_at: Timestamp | None = Field(description="Not tracked yet: always null")


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
