"""End-user auth's bodies (decisions.md: AuthStatus, AuthSettings, the provider PUT body)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from svc.kit.api import ApiInput, ApiModel

SESSION_DAYS_DEFAULT = 30
# A brand colour is a CSS hex colour of six digits (what the sign-in page's style takes as is).
COLOR = r"^#[0-9a-fA-F]{6}$"
# The logo is an image the sign-in page links to, from the project's own site or elsewhere.
LOGO = r"^https?://[^\s\"'<>]+$"


class AuthSettings(ApiModel):
    session_days: int = Field(description="How long a signed-in end user stays signed in (1-365 days)")
    brand_name: str | None = Field(description="The name the sign-in page shows (the project's name when null)")
    brand_color: str | None = Field(description="The sign-in page's accent colour, #rrggbb")
    logo_url: str | None = Field(description="An image the sign-in page shows above the providers")


class AuthSettingsPatch(ApiInput):
    """Only the fields sent change; a brand field sent as null goes back to none."""

    session_days: int = Field(default=SESSION_DAYS_DEFAULT, ge=1, le=365, strict=True)
    brand_name: Annotated[str, StringConstraints(max_length=100, strip_whitespace=True)] | None = None
    brand_color: Annotated[str, StringConstraints(pattern=COLOR)] | None = None
    logo_url: Annotated[str, StringConstraints(max_length=2048, pattern=LOGO)] | None = None


class AuthProviderView(ApiModel):
    name: str = Field(description="github, google or microsoft")
    client_id: str = Field(description="The project's OAuth app at the provider (its secret is never returned)")


class AuthStatus(ApiModel):
    granted: bool
    configured: bool = Field(description="Granted, with at least one provider set: end users can sign in")
    providers: list[AuthProviderView]
    hosts: list[str] = Field(description="Every host of the project: register https://<host>/__svc/auth/callback/"
                                         "<provider> for each at the provider")
    settings: AuthSettings


# What the document says of a client id and secret: required, something besides blanks. The
# service checks it (an empty or missing one is the spec's 400 invalid_provider, not bad_request).
_GIVEN: dict[str, Any] = {"minLength": 1, "pattern": r"\S"}


class AuthProviderPut(ApiInput):
    """Both required and not empty (400 invalid_provider otherwise); the secret is sealed."""

    model_config = ApiInput.model_config | {"json_schema_extra": {"required": ["clientId", "clientSecret"]}}

    client_id: Annotated[str, StringConstraints(max_length=500)] = Field(
        default="", json_schema_extra=_GIVEN, description="The OAuth app's client id: not empty or only blanks")
    client_secret: Annotated[str, StringConstraints(max_length=4096)] = Field(
        default="", json_schema_extra=_GIVEN | {"writeOnly": True},
        description="The OAuth app's client secret: not empty or only blanks; sealed, never returned")
