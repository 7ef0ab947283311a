"""The identity provider's settings: who people sign in with (docs/identity.md)."""

from __future__ import annotations

from pydantic import SecretStr

from svc.settings import ComponentSettings


class IdpSettings(ComponentSettings):
    # Identity provider: "github" or "oidc"; unset means no identity-provider login.
    idp_provider: str | None = None
    # The OAuth client svc is at the provider.
    idp_client_id: str | None = None
    # The OAuth client's secret.
    idp_client_secret: SecretStr | None = None
    # For oidc: the issuer (discovery at {issuer}/.well-known/openid-configuration).
    idp_issuer: str | None = None
    # For github: the site's base URL (a fake speaks the same protocol at another address).
    idp_github_url: str = "https://github.com"
    # For github: the API's base URL.
    idp_github_api_url: str = "https://api.github.com"
    # Comma-separated prefixes a login redirect must start with; empty means [public_url].
    idp_redirects: str = ""

    def redirect_allowlist(self, public_url: str) -> list[str]:
        items = [p.strip() for p in self.idp_redirects.split(",") if p.strip()]
        return items or [public_url]
