"""Identity providers: the GitHub OAuth app protocol, any OpenID Connect issuer, and a fake of both."""

from __future__ import annotations

from svc.adapters.idp.port import IdentityProvider, IdpConfigError, IdpError, IdpIdentity, IdpUnavailable
from svc.adapters.idp.settings import IdpSettings
from svc.settings import Config

__all__ = ["IdentityProvider", "IdpConfigError", "IdpError", "IdpIdentity", "IdpUnavailable",
           "build_identity_provider"]


def build_identity_provider(config: Config) -> IdentityProvider | None:
    """The provider named by SVC_IDP_PROVIDER ("github" or "oidc"), or None when it is unset.
    A set but incomplete configuration is an error at start, never a broken login page later."""
    settings = config.settings_of(IdpSettings)
    name = (settings.idp_provider or "").strip().lower()
    if not name:
        return None
    client_id = (settings.idp_client_id or "").strip()
    secret = settings.idp_client_secret.get_secret_value() if settings.idp_client_secret else ""
    if not client_id or not secret:
        raise IdpConfigError("SVC_IDP_CLIENT_ID and SVC_IDP_CLIENT_SECRET are required with SVC_IDP_PROVIDER")
    if name == "github":
        from svc.adapters.idp.github import GitHubProvider

        return GitHubProvider(client_id=client_id, client_secret=secret, site_url=settings.idp_github_url,
                              api_url=settings.idp_github_api_url)
    if name == "oidc":
        from svc.adapters.idp.oidc import OidcProvider

        if not settings.idp_issuer:
            raise IdpConfigError("SVC_IDP_ISSUER is required with SVC_IDP_PROVIDER=oidc")
        return OidcProvider(client_id=client_id, client_secret=secret, issuer=settings.idp_issuer)
    raise IdpConfigError(f"SVC_IDP_PROVIDER must be 'github' or 'oidc', not {name!r}")
