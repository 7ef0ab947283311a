from __future__ import annotations

from typing import Annotated

from email_validator import EmailNotValidError, validate_email
from pydantic import AfterValidator, Field, StringConstraints

from svc.domains.orgs.schemas import OrgMembership
from svc.kit.api import ApiInput, ApiModel, Timestamp, invalid, trimmed
from svc.models.states import InviteState, Role


def normalize_email(value: str) -> str:
    """One spelling per address, so a re-invite finds its row and members are matched by email:
    a plain addr-spec (no display name, no quoted or non-ASCII local part, no IP literal), the
    domain in its ASCII (IDNA) form, the whole address lowercased."""
    try:
        checked = validate_email(value, check_deliverability=False, allow_smtputf8=False)
    except EmailNotValidError:
        raise invalid("value_error", "must be an email address such as name@example.com") from None
    return (checked.ascii_email or checked.normalized).lower()


EmailAddress = Annotated[str, StringConstraints(min_length=3, max_length=320), trimmed(3),
                         AfterValidator(normalize_email)]


class InviteCreate(ApiInput):
    # Stated as the document's `email` format for clients; normalize_email decides (and words the
    # refusal), and also takes surrounding whitespace.
    email: EmailAddress = Field(json_schema_extra={"format": "email"},
                                description="An email address (ASCII), such as name@example.com")
    role: Role = Role.member


class Invite(ApiModel):
    id: str
    email: str
    role: Role
    state: InviteState = Field(description="pending, or expired once expiresAt has passed (listed until revoked)")
    expires_at: Timestamp
    sent_at: Timestamp | None = Field(description="When the mail server accepted the invite mail; "
                                                  "null while it is queued or if it could not be delivered")
    created_at: Timestamp
    token: str | None = Field(default=None, exclude_if=lambda v: v is None,
                              description="Only in the create/resend response, once: the invite secret "
                                          "(also sent in the mail's link). Never returned again.")


class InviteList(ApiModel):
    invites: list[Invite]


class InviteViewOrg(ApiModel):
    slug: str
    name: str


class InviteView(ApiModel):
    """What the holder of an invite link may see without signing in."""

    org: InviteViewOrg
    role: Role
    state: InviteState
    expires_at: Timestamp


class InviteAccepted(ApiModel):
    already_member: bool = Field(description="True when the caller was a member already (role unchanged)")
    org: OrgMembership
