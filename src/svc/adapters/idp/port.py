"""The identity-provider port: where to send the browser, and what a returned code proves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# Bounds of the users table (provider subject, name, email).
MAX_SUBJECT = 200
MAX_NAME = 200
MAX_EMAIL = 320


@dataclass(frozen=True)
class IdpIdentity:
    """Who signed in: the provider's stable subject, and profile data that may be absent."""

    subject: str
    email: str | None
    name: str | None


class IdpConfigError(ValueError):
    """The settings name a provider but do not describe it completely."""


class IdpError(Exception):
    """The provider refused the sign-in (bad code, bad client, an ID token that does not verify).

    `code` is what the client is told; the message never holds a token, a code or a secret."""

    code: str = "login_failed"


class IdpUnavailable(IdpError):
    """The provider could not be reached or answered with a server error."""

    code = "idp_unavailable"


class IdentityProvider(Protocol):
    # The {provider} path segment: "github" or "oidc".
    name: str

    async def authorize_url(self, *, state: str, redirect_uri: str, code_challenge: str, nonce: str) -> str:
        """The provider's authorize page for this login (PKCE S256 challenge; nonce where the protocol has one).
        Async because an OpenID Connect issuer is found by discovery."""
        ...

    async def exchange(self, *, code: str, redirect_uri: str, code_verifier: str, nonce: str) -> IdpIdentity:
        """Trade the code for the user's identity; raise IdpError (or IdpUnavailable)."""
        ...


def clean_profile(email: object, name: object) -> tuple[str | None, str | None]:
    """Provider profile data as the users table can hold it: a plausible email or None, a capped name."""
    mail = email.strip() if isinstance(email, str) else ""
    ok = 3 <= len(mail) <= MAX_EMAIL and "@" in mail and not any(c.isspace() for c in mail)
    text = " ".join(name.split()) if isinstance(name, str) else ""
    return (mail if ok else None), (text[:MAX_NAME] or None)
