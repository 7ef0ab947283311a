"""Any OpenID Connect issuer: discovery, authorization code + PKCE S256 + nonce, a verified ID token.

The ID token is verified with joserfc (the JOSE library that Authlib ships and now points its own
`authlib.jose` users to) against the issuer's JWKS: signature, iss, aud (and azp), exp, iat, nonce."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any
from urllib.parse import quote_plus, urlencode, urlsplit

import httpx
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from svc.adapters.idp import _http
from svc.adapters.idp.port import MAX_SUBJECT, IdpError, IdpIdentity, IdpUnavailable, clean_profile

SCOPE = "openid email profile"
# Asymmetric algorithms only: an HS* token signed with the client secret proves less, and "none" nothing.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
METADATA_TTL = 3600.0
LEEWAY_SECONDS = 60


class OidcProvider:
    name: str = "oidc"

    def __init__(self, *, client_id: str, client_secret: str, issuer: str) -> None:
        self.client_id = client_id
        self._client_secret = client_secret
        self.issuer = issuer.rstrip("/")
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._keys: KeySet | None = None
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:  # never the secret
        return f"OidcProvider(issuer={self.issuer!r}, client_id={self.client_id!r})"

    async def authorize_url(self, *, state: str, redirect_uri: str, code_challenge: str, nonce: str) -> str:
        meta = await self._discover()
        endpoint = meta["authorization_endpoint"]
        query = urlencode({
            "response_type": "code", "client_id": self.client_id, "redirect_uri": redirect_uri, "scope": SCOPE,
            "state": state, "nonce": nonce, "code_challenge": code_challenge, "code_challenge_method": "S256",
        })
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    async def exchange(self, *, code: str, redirect_uri: str, code_verifier: str, nonce: str) -> IdpIdentity:
        meta = await self._discover()
        async with _http.client() as http:
            tokens = await self._token(http, meta, code, redirect_uri, code_verifier)
            id_token = tokens.get("id_token")
            if not isinstance(id_token, str) or not id_token:
                raise IdpError("the issuer sent no ID token")
            claims = await self._verify(http, meta, id_token, nonce)
            subject = claims["sub"]
            if not isinstance(subject, str) or not 1 <= len(subject) <= MAX_SUBJECT:
                raise IdpError("the ID token's subject is empty or too long")
            profile = dict(claims)
            access_token = tokens.get("access_token")
            userinfo = meta.get("userinfo_endpoint")
            wants_more = not profile.get("email") or not profile.get("name")
            if wants_more and isinstance(userinfo, str) and isinstance(access_token, str) and access_token:
                extra = await self._userinfo(http, userinfo, access_token)
                if extra.get("sub") == subject:  # OIDC Core 5.3.2: userinfo of another subject is ignored
                    profile = {**extra, **{k: v for k, v in claims.items() if v not in (None, "")}}
        email = profile.get("email") if profile.get("email_verified") is not False else None
        mail, name = clean_profile(email, profile.get("name") or profile.get("preferred_username"))
        return IdpIdentity(subject=subject, email=mail, name=name)

    async def _discover(self) -> dict[str, Any]:
        async with self._lock:
            if self._metadata is not None and time.monotonic() - self._metadata_at < METADATA_TTL:
                return self._metadata
            async with _http.client() as http:
                url = f"{self.issuer}/.well-known/openid-configuration"
                response = await _http.send(http, http.build_request("GET", url), "discovery")
                if response.status_code != 200:
                    raise IdpUnavailable(f"OpenID discovery failed (HTTP {response.status_code})")
                meta = _http.json_object(response, "discovery")
            # OpenID Discovery 4.3: the document must name the issuer it was fetched for.
            if not isinstance(meta.get("issuer"), str) or meta["issuer"].rstrip("/") != self.issuer:
                raise IdpUnavailable("the discovery document names another issuer")
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                value = meta.get(key)
                if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
                    raise IdpUnavailable(f"the discovery document has no usable {key}")
            self._metadata, self._metadata_at, self._keys = meta, time.monotonic(), None
            return meta

    async def _token(self, http: httpx.AsyncClient, meta: dict[str, Any], code: str, redirect_uri: str,
                     verifier: str) -> dict[str, Any]:
        data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": verifier, "client_id": self.client_id}
        headers = {"accept": "application/json"}
        methods = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if "client_secret_basic" in methods or "client_secret_post" not in methods:
            headers["authorization"] = _basic(self.client_id, self._client_secret)
        else:
            data["client_secret"] = self._client_secret
        request = http.build_request("POST", meta["token_endpoint"], data=data, headers=headers)
        response = await _http.send(http, request, "token")
        body = _http.json_object(response, "token")
        if response.status_code != 200 or "error" in body:
            raise IdpError(f"the issuer refused the code ({_http.oauth_error(body)})")
        return body

    async def _jwks(self, http: httpx.AsyncClient, meta: dict[str, Any], *, refresh: bool) -> KeySet:
        if self._keys is not None and not refresh:
            return self._keys
        response = await _http.send(http, http.build_request("GET", meta["jwks_uri"]), "jwks")
        if response.status_code != 200:
            raise IdpUnavailable(f"the issuer's JWKS failed (HTTP {response.status_code})")
        body = _http.json_object(response, "jwks")
        try:
            keys = KeySet.import_key_set(body)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError):
            raise IdpUnavailable("the issuer's JWKS is not a usable key set") from None
        self._keys = keys
        return keys

    async def _verify(self, http: httpx.AsyncClient, meta: dict[str, Any], id_token: str,
                      nonce: str) -> dict[str, Any]:
        allowed = [a for a in (meta.get("id_token_signing_alg_values_supported") or ["RS256"]) if a in ALGORITHMS]
        keys = await self._jwks(http, meta, refresh=False)
        try:
            try:
                token = jwt.decode(id_token, keys, algorithms=allowed or ["RS256"])
            except InvalidKeyIdError:  # the issuer rotated its keys: fetch them once more
                keys = await self._jwks(http, meta, refresh=True)
                token = jwt.decode(id_token, keys, algorithms=allowed or ["RS256"])
            registry = jwt.JWTClaimsRegistry(
                leeway=LEEWAY_SECONDS,
                iss={"essential": True, "value": meta["issuer"]},
                aud={"essential": True, "value": self.client_id},
                sub={"essential": True}, exp={"essential": True}, iat={"essential": True},
                nonce={"essential": True, "value": nonce},
            )
            registry.validate(token.claims)
        except (JoseError, ValueError, TypeError) as exc:
            raise IdpError(f"the ID token does not verify ({type(exc).__name__})") from None
        claims = token.claims
        aud = claims.get("aud")
        # OIDC Core 3.1.3.7: several audiences need an azp naming this client.
        if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != self.client_id:
            raise IdpError("the ID token is meant for another client")
        return claims

    async def _userinfo(self, http: httpx.AsyncClient, url: str, access_token: str) -> dict[str, Any]:
        request = http.build_request("GET", url, headers={"authorization": f"Bearer {access_token}",
                                                          "accept": "application/json"})
        try:
            response = await _http.send(http, request, "userinfo")
            if response.status_code != 200:
                return {}
            return _http.json_object(response, "userinfo")
        except IdpError:
            return {}  # profile data is optional: the verified ID token already says who this is


def _basic(user: str, password: str) -> str:
    """client_secret_basic (RFC 6749 2.3.1): both parts form-encoded, then base64."""
    raw = f"{quote_plus(user)}:{quote_plus(password)}".encode()
    return "Basic " + base64.b64encode(raw).decode()
