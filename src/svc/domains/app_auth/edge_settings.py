"""Where the social providers of projects' end users are (issue 48). The real ones by default;
SVC_AUTH_FAKE_URL points all three at one fake (svc.adapters.idp.fake, which speaks GitHub's,
Google's and Microsoft's shapes): `make run` starts it, so a newcomer signs in without registering
an OAuth app anywhere."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from svc.settings import AreaSettings


@dataclass(frozen=True)
class ProviderUrls:
    github: str
    github_api: str
    # OIDC: where discovery is read ({base}/.well-known/openid-configuration).
    google: str
    microsoft: str


class AuthSigninSettings(AreaSettings):
    # A fake of all three providers running elsewhere (python -m svc.adapters.idp.fake); set, it
    # replaces the real ones below (SVC_AUTH_FAKE: the one svc serve runs itself).
    auth_fake_url: str | None = None
    # GitHub's site (the OAuth app's authorize and token pages).
    auth_github_url: str = "https://github.com"
    # GitHub's API (the signed-in user's profile and verified emails).
    auth_github_api_url: str = "https://api.github.com"
    # Google's OpenID Connect issuer.
    auth_google_issuer: str = "https://accounts.google.com"
    # Microsoft's multi-tenant OpenID Connect discovery (work, school and personal accounts).
    auth_microsoft_issuer: str = "https://login.microsoftonline.com/common/v2.0"
    # How long a live session's answer is kept in each API process (apps ask /__svc/auth/session on
    # every page; the project's database has few connections). Logout forgets it in its process at
    # once; another replica may answer for an ended session this long at most. 0: never kept.
    auth_session_cache_seconds: float = Field(default=5.0, ge=0, le=60)

    def provider_urls(self, dev_fake: str | None = None) -> ProviderUrls:
        """`dev_fake`: the fake svc serve runs (SVC_AUTH_FAKE), when no other is named."""
        fake = (self.auth_fake_url or dev_fake or "").rstrip("/")
        if fake:
            return ProviderUrls(github=fake, github_api=fake, google=f"{fake}/google",
                                microsoft=f"{fake}/microsoft/common/v2.0")
        return ProviderUrls(github=self.auth_github_url.rstrip("/"), github_api=self.auth_github_api_url.rstrip("/"),
                            google=self.auth_google_issuer.rstrip("/"),
                            microsoft=self.auth_microsoft_issuer.rstrip("/"))
