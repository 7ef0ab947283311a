from __future__ import annotations

from svc.adapters.idp.port import IdpError
from svc.errors import BadRequest, NotFound


class UnknownProvider(NotFound):
    default_message = "No identity provider of that name is configured"


class RedirectNotAllowed(BadRequest):
    default_message = ("redirect must be an absolute http(s) URL under one of the allowed prefixes "
                       "(setting SVC_IDP_REDIRECTS)")


class LoginStateInvalid(BadRequest):
    default_message = "This sign-in is unknown, expired or already used: start again"


class LoginOtherBrowser(BadRequest):
    default_message = "This sign-in was started in another browser: start again here"


class ProviderRefused(IdpError):
    """The provider sent the browser back with an OAuth error instead of a code."""

    def __init__(self, code: str) -> None:
        super().__init__(f"the identity provider answered {code}")
        self.code = code
