"""Inputs and outputs of the identity-provider login: query parameters and URL fragments.

The callback answers with a redirect whose fragment is a `Session` (identity/schemas.py) on success
or a `LoginFailure` on failure, form-encoded: `#token=..&expiresAt=..&userId=..&subject=..` or
`#error=<code>&message=<text>`."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from svc.kit.api import ApiModel

MAX_REDIRECT = 2048  # login_states.redirect
MAX_STATE = 256
MAX_CODE = 2048
MAX_ERROR = 256

ProviderPath = Annotated[str, Path(description="The configured provider's name: github or oidc")]
RedirectQuery = Annotated[str, Query(
    max_length=MAX_REDIRECT,
    description="The client callback (an absolute http(s) URL under one of the SVC_IDP_REDIRECTS prefixes); "
                "the session arrives in its fragment")]
StateQuery = Annotated[str, Query(description="The state /start gave the provider, sent back unchanged")]
CodeQuery = Annotated[str | None, Query(description="The provider's authorization code")]
ErrorQuery = Annotated[str | None, Query(description="The provider's OAuth error code, when sign-in failed")]


class LoginFailure(ApiModel):
    """The fragment of the client callback after a failed sign-in."""

    error: str
    message: str
