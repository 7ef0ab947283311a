"""Social sign-in of a project's end users, per provider shape: GitHub's OAuth app, and Google's and
Microsoft's OpenID Connect (discovery, a verified ID token). Authorization code with PKCE (S256),
state and, for OIDC, a nonce; the request and token parameters are Authlib's (rfc6749/rfc7636), the
ID token is verified with joserfc (the JOSE library Authlib points to) against the issuer's keys.

Where each provider is comes from AuthSigninSettings (the real providers by default; `make run` and
the tests point all three at the fake of svc.adapters.idp.fake). A provider's failure is an
SigninFailed with a short code for the page; no token, code or secret is ever in its message."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from svc.adapters.social_fake.settings import SocialFakeSettings
from svc.domains.app_auth.edge_settings import AuthSigninSettings
from svc.settings import Config

GITHUB, GOOGLE, MICROSOFT = "github", "google", "microsoft"
PROVIDERS = (GITHUB, GOOGLE, MICROSOFT)
TITLES = {GITHUB: "GitHub", GOOGLE: "Google", MICROSOFT: "Microsoft"}
OIDC_SCOPE = "openid email profile"
GITHUB_SCOPE = "read:user user:email"
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
LEEWAY_SECONDS = 60
METADATA_SECONDS = 3600.0
TIMEOUT = httpx.Timeout(10.0)
MAX_BODY = 1024 * 1024
MAX_FIELD = 320


class SigninFailed(Exception):
    """The provider did not confirm who signed in. `code`: what the page says (never a secret)."""

    def __init__(self, message: str, code: str = "login_failed") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Flow:
    """One sign-in's secrets, kept by svc between login and callback: the state, the PKCE verifier
    and the OIDC nonce."""

    state: str
    verifier: str
    nonce: str

    @property
    def challenge(self) -> str:
        return str(create_s256_code_challenge(self.verifier))


def new_flow() -> Flow:
    return Flow(state=generate_token(43), verifier=generate_token(64), nonce=generate_token(32))


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in. `email` only when the provider says it is verified."""

    provider: str
    subject: str
    email: str | None
    name: str | None
    avatar_url: str | None


@dataclass(frozen=True)
class _Endpoints:
    authorize: str
    token: str
    # OIDC only: the issuer the ID token must name ("{tenantid}" in it: the token's `tid`), its keys.
    issuer: str = ""
    jwks: str = ""
    # GitHub only: the API the profile is read from.
    api: str = ""


_metadata: dict[str, tuple[float, dict[str, Any]]] = {}


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False, headers={"user-agent": "svc-auth/1"})


async def _get_json(http: httpx.AsyncClient, request: httpx.Request, what: str) -> Any:
    try:
        response = await http.send(request)
    except httpx.HTTPError as exc:
        raise SigninFailed(f"{what}: the provider could not be reached ({type(exc).__name__})",
                           "provider_unavailable") from None
    if response.status_code >= 500:
        raise SigninFailed(f"{what}: the provider failed (HTTP {response.status_code})", "provider_unavailable")
    if len(response.content) > MAX_BODY:
        raise SigninFailed(f"{what}: the answer is too large")
    try:
        body = response.json()
    except ValueError:
        raise SigninFailed(f"{what}: the answer is not JSON (HTTP {response.status_code})") from None
    if response.status_code != 200 or (isinstance(body, dict) and "error" in body):
        error = body.get("error") if isinstance(body, dict) else None
        safe = error if isinstance(error, str) and error.replace("_", "").isalnum() and len(error) < 64 else "?"
        raise SigninFailed(f"{what}: refused (HTTP {response.status_code}, {safe})")
    return body


async def _discover(discovery_base: str) -> dict[str, Any]:
    """The OIDC discovery document of `discovery_base`, kept an hour (per process)."""
    kept = _metadata.get(discovery_base)
    if kept is not None and time.monotonic() - kept[0] < METADATA_SECONDS:
        return kept[1]
    async with _client() as http:
        url = f"{discovery_base.rstrip('/')}/.well-known/openid-configuration"
        meta = await _get_json(http, http.build_request("GET", url), "discovery")
    if not isinstance(meta, dict):
        raise SigninFailed("discovery: not a JSON object", "provider_unavailable")
    for key in ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"):
        value = meta.get(key)
        if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
            raise SigninFailed(f"discovery: no usable {key}", "provider_unavailable")
    _metadata[discovery_base] = (time.monotonic(), meta)
    return meta


async def _endpoints(config: Config, provider: str) -> _Endpoints:
    urls = config.settings_of(AuthSigninSettings).provider_urls(config.settings_of(SocialFakeSettings).base_url())
    if provider == GITHUB:
        site, api = urls.github, urls.github_api
        return _Endpoints(authorize=f"{site}/login/oauth/authorize", token=f"{site}/login/oauth/access_token", api=api)
    meta = await _discover(urls.google if provider == GOOGLE else urls.microsoft)
    return _Endpoints(authorize=meta["authorization_endpoint"], token=meta["token_endpoint"], issuer=meta["issuer"],
                      jwks=meta["jwks_uri"])


async def authorize_url(config: Config, *, provider: str, client_id: str, redirect_uri: str, flow: Flow,
                        login_hint: str | None = None) -> str:
    """The provider's page for this sign-in (OIDC: may ask the provider's discovery). `login_hint`:
    the account the app suggests (GitHub calls it `login`)."""
    where = await _endpoints(config, provider)
    extra: dict[str, str] = {"code_challenge": flow.challenge, "code_challenge_method": "S256"}
    if login_hint:
        extra["login" if provider == GITHUB else "login_hint"] = login_hint
    if provider != GITHUB:
        extra["nonce"] = flow.nonce
    if provider == GOOGLE:
        extra["prompt"] = "select_account"
    scope = GITHUB_SCOPE if provider == GITHUB else OIDC_SCOPE
    return str(prepare_grant_uri(where.authorize, client_id, "code", redirect_uri=redirect_uri, scope=scope,
                                 state=flow.state, **extra))


async def exchange(config: Config, *, provider: str, client_id: str, client_secret: str, redirect_uri: str,
                   code: str, flow: Flow) -> Identity:
    """Trade the code (with the PKCE verifier) for who signed in; SigninFailed otherwise."""
    where = await _endpoints(config, provider)
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "code_verifier": flow.verifier, "client_id": client_id, "client_secret": client_secret}
    async with _client() as http:
        tokens = await _get_json(http, http.build_request("POST", where.token, data=form,
                                                          headers={"accept": "application/json"}), "token")
        if not isinstance(tokens, dict):
            raise SigninFailed("token: not a JSON object")
        if provider == GITHUB:
            return await _github_identity(http, where, tokens)
        return await _oidc_identity(http, where, provider, client_id, tokens, flow.nonce)


async def _github_identity(http: httpx.AsyncClient, where: _Endpoints, tokens: dict[str, Any]) -> Identity:
    access = tokens.get("access_token")
    if not isinstance(access, str) or not access:
        raise SigninFailed("token: no access token")
    headers = {"authorization": f"Bearer {access}", "accept": "application/vnd.github+json"}
    user = await _get_json(http, http.build_request("GET", f"{where.api}/user", headers=headers), "user")
    if not isinstance(user, dict) or not isinstance(user.get("id"), int):
        raise SigninFailed("user: no id")
    # Only a primary, verified address links accounts (GitHub lists a private one on /user/emails).
    emails = await _get_json(http, http.build_request("GET", f"{where.api}/user/emails", headers=headers), "emails")
    email = next((e.get("email") for e in emails if isinstance(e, dict) and e.get("primary") is True
                  and e.get("verified") is True), None) if isinstance(emails, list) else None
    return Identity(provider=GITHUB, subject=str(user["id"]), email=_clean_email(email),
                    name=_text(user.get("name")) or _text(user.get("login")), avatar_url=_url(user.get("avatar_url")))


async def _oidc_identity(http: httpx.AsyncClient, where: _Endpoints, provider: str, client_id: str,
                         tokens: dict[str, Any], nonce: str) -> Identity:
    id_token = tokens.get("id_token")
    if not isinstance(id_token, str) or not id_token:
        raise SigninFailed("token: no ID token")
    keys_body = await _get_json(http, http.build_request("GET", where.jwks), "jwks")
    try:
        keys = KeySet.import_key_set(keys_body)
        token = jwt.decode(id_token, keys, algorithms=ALGORITHMS)
        claims = token.claims
        issuer = where.issuer
        if "{tenantid}" in issuer:  # Microsoft's multi-tenant issuer: the token's own tenant in it
            tenant = claims.get("tid")
            if not isinstance(tenant, str) or not tenant.replace("-", "").isalnum():
                raise SigninFailed("the ID token names no tenant")
            issuer = issuer.replace("{tenantid}", tenant)
        jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS, iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": client_id}, sub={"essential": True}, exp={"essential": True},
            iat={"essential": True}, nonce={"essential": True, "value": nonce},
        ).validate(claims)
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise SigninFailed(f"the ID token does not verify ({type(exc).__name__})") from None
    subject = claims.get("sub")
    if not isinstance(subject, str) or not 1 <= len(subject) <= 255:
        raise SigninFailed("the ID token's subject is empty or too long")
    email = claims.get("email") if claims.get("email_verified") is True else None
    return Identity(provider=provider, subject=subject, email=_clean_email(email),
                    name=_text(claims.get("name")) or _text(claims.get("preferred_username")),
                    avatar_url=_url(claims.get("picture")))


def _clean_email(value: object) -> str | None:
    mail = value.strip() if isinstance(value, str) else ""
    if not 3 <= len(mail) <= MAX_FIELD or "@" not in mail or any(c.isspace() for c in mail):
        return None
    return mail


def _text(value: object) -> str | None:
    return " ".join(value.split())[:200] or None if isinstance(value, str) else None


def _url(value: object) -> str | None:
    if isinstance(value, str) and len(value) <= 2048 and urlsplit(value).scheme in ("http", "https"):
        return value
    return None
