"""GitHub OAuth app: authorize page, code exchange, /user and /user/emails.

Wire protocol: https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps.
The token endpoint answers errors with 200 and an `error` field, so the body decides, not the status."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import httpx

from svc.adapters.idp import _http
from svc.adapters.idp.port import IdpError, IdpIdentity, clean_profile

SCOPE = "read:user user:email"
API_HEADERS = {"accept": "application/vnd.github+json", "x-github-api-version": "2022-11-28"}


class GitHubProvider:
    name: str = "github"

    def __init__(self, *, client_id: str, client_secret: str, site_url: str = "https://github.com",
                 api_url: str = "https://api.github.com") -> None:
        self.client_id = client_id
        self._client_secret = client_secret
        self.site_url = site_url.rstrip("/")
        self.api_url = api_url.rstrip("/")

    def __repr__(self) -> str:  # never the secret
        return f"GitHubProvider(site_url={self.site_url!r}, client_id={self.client_id!r})"

    async def authorize_url(self, *, state: str, redirect_uri: str, code_challenge: str, nonce: str) -> str:
        query = urlencode({
            "client_id": self.client_id, "redirect_uri": redirect_uri, "scope": SCOPE, "state": state,
            "code_challenge": code_challenge, "code_challenge_method": "S256", "allow_signup": "true",
        })
        return f"{self.site_url}/login/oauth/authorize?{query}"

    async def exchange(self, *, code: str, redirect_uri: str, code_verifier: str, nonce: str) -> IdpIdentity:
        async with _http.client() as http:
            access_token = await self._access_token(http, code, redirect_uri, code_verifier)
            auth = {"authorization": f"Bearer {access_token}", **API_HEADERS}
            user = _http.json_object(await self._get(http, "/user", auth), "user")
            uid = user.get("id")
            login = user.get("login")
            if not isinstance(uid, int) or isinstance(uid, bool) or uid <= 0:
                raise IdpError("the GitHub user has no numeric id")
            email = user.get("email")
            if not (isinstance(email, str) and email):
                email = await self._primary_verified_email(http, auth)
            mail, name = clean_profile(email, user.get("name") or login)
            return IdpIdentity(subject=str(uid), email=mail, name=name)

    async def _access_token(self, http: httpx.AsyncClient, code: str, redirect_uri: str, verifier: str) -> str:
        request = http.build_request(
            "POST", f"{self.site_url}/login/oauth/access_token", headers={"accept": "application/json"},
            data={"client_id": self.client_id, "client_secret": self._client_secret, "code": code,
                  "redirect_uri": redirect_uri, "code_verifier": verifier})
        response = await _http.send(http, request, "token")
        body = _http.json_object(response, "token")
        if "error" in body or response.status_code != 200:
            raise IdpError(f"GitHub refused the code ({_http.oauth_error(body)})")
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise IdpError("GitHub sent no access token")
        return token

    async def _get(self, http: httpx.AsyncClient, path: str, headers: dict[str, str]) -> httpx.Response:
        response = await _http.send(http, http.build_request("GET", f"{self.api_url}{path}", headers=headers), path)
        if response.status_code != 200:
            raise IdpError(f"GitHub refused {path} (HTTP {response.status_code})")
        return response

    async def _primary_verified_email(self, http: httpx.AsyncClient, headers: dict[str, str]) -> str | None:
        """A private email is listed by /user/emails (scope user:email); only a primary, verified one counts."""
        try:
            emails: Any = _http.json_body(await self._get(http, "/user/emails", headers), "user/emails")
        except IdpError:
            return None  # scope not granted, or the endpoint refused: the login goes on without an email
        if not isinstance(emails, list):
            return None
        for item in emails:
            if isinstance(item, dict) and item.get("primary") is True and item.get("verified") is True:
                value = item.get("email")
                return value if isinstance(value, str) else None
        return None
