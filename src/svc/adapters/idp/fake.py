"""A fake identity provider: a real HTTP server speaking both wire protocols svc uses.

- GitHub OAuth app: GET /login/oauth/authorize, POST /login/oauth/access_token (errors are 200 with an
  `error` field, as GitHub does), GET /user, GET /user/emails.
- OpenID Connect: GET /.well-known/openid-configuration, GET /authorize, POST /token, GET /jwks,
  GET /userinfo; ID tokens are RS256-signed with a key made at start. The issuer is the base URL.
- The same issuer in the shapes of the social providers a project's end users sign in with (issue
  48): Google's under /google (its paths: /o/oauth2/v2/auth, /token, /v1/userinfo, /oauth2/v3/certs;
  the issuer BASE/google) and Microsoft's under /microsoft (the multi-tenant "common" endpoints
  /common/oauth2/v2.0/authorize and /token, /common/discovery/v2.0/keys, /oidc/userinfo; its
  discovery names the issuer BASE/microsoft/{tenantid}/v2.0, and an ID token's iss has the tenant of
  its `tid` claim in its place, as Microsoft's do).

The authorize pages approve at once, as the test user named by `login` (GitHub's hint) or `login_hint`
(OIDC's), else the default user; `fake_action=deny` answers as if the user pressed "Cancel". The fake
checks what the real providers check: client id and secret, the redirect URI (registered ones when
given, and the same one at the token endpoint), single-use codes bound to their client and protocol,
and the PKCE verifier.

Development: `python -m svc.adapters.idp.fake --port 9900` prints the SVC_* settings that point svc at it.
Tests: `async with running_fake_idp(FakeIdp(...)) as fake:` serves it on 127.0.0.1, port 0.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import secrets
import socket
import time
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

import uvicorn
from joserfc import jwt
from joserfc.jwk import RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

CODE_SECONDS = 300
TOKEN_SECONDS = 3600
GITHUB = "github"
OIDC = "oidc"
TAMPERS = ("nonce", "aud", "iss", "exp", "signature")
# The tenant of the fake's Microsoft accounts (Microsoft's own for personal accounts).
MICROSOFT_TENANT = "9188040d-6c67-4c5b-b112-36a304b66dad"


@dataclass(frozen=True)
class FakeUser:
    login: str
    id: int
    name: str | None = None
    email: str | None = None
    # GitHub shows a public email on /user; a private one only on /user/emails.
    email_public: bool = True
    email_verified: bool = True

    @property
    def oidc_subject(self) -> str:
        return f"fake-{self.id}"


DEFAULT_USERS: tuple[FakeUser, ...] = (
    FakeUser("alice", 1001, "Alice Example", "alice@example.com"),
    # Private but verified: GitHub gives it only on /user/emails; OIDC sends it as a claim.
    FakeUser("bob", 1002, "Bob Builder", "bob@example.com", email_public=False),
    # No email anywhere (GitHub: /user email null, /user/emails empty; OIDC: no email claim).
    FakeUser("ghost", 1003, None, None),
    # An email the provider has not verified: svc must not take it.
    FakeUser("carol", 1004, "Carol Unverified", "carol@example.com", email_public=False, email_verified=False),
)


@dataclass
class _Grant:
    protocol: str
    issuer: str
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str | None
    scope: str
    user: FakeUser
    expires: float


@dataclass
class _Access:
    protocol: str
    issuer: str
    user: FakeUser
    scope: str
    expires: float


@dataclass
class FakeIdp:
    client_id: str = "svc-dev"
    client_secret: str = "svc-dev-secret"  # a fake's well-known development secret
    users: tuple[FakeUser, ...] = DEFAULT_USERS
    default_user: str = "alice"
    # When set, an authorize request must name one of these exactly (as a registered OAuth app does).
    redirect_uris: list[str] | None = None
    # Tests set this to make the next ID tokens wrong in one way (one of TAMPERS).
    id_token_tamper: str | None = None
    base_url: str = ""
    # Development (SVC_AUTH_FAKE): any non-empty client id and secret are an app, as if registered.
    any_client: bool = False
    # Every access token and code handed out, so a test can check none of them leaked into logs.
    issued: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._users = {u.login: u for u in self.users}
        if self.default_user not in self._users:
            raise ValueError(f"default user {self.default_user!r} is not one of the users")
        self.key = RSAKey.generate_key(2048, parameters={"use": "sig", "alg": "RS256"}, auto_kid=True)
        self._codes: dict[str, _Grant] = {}
        self._tokens: dict[str, _Access] = {}
        self.app = Starlette(routes=[
            Route("/login/oauth/authorize", self._github_authorize, methods=["GET"]),
            Route("/login/oauth/access_token", self._github_token, methods=["POST"]),
            Route("/user", self._github_user, methods=["GET"]),
            Route("/user/emails", self._github_emails, methods=["GET"]),
            Route("/.well-known/openid-configuration", self._discovery, methods=["GET"]),
            Route("/authorize", self._oidc_authorize, methods=["GET"]),
            Route("/token", self._oidc_token, methods=["POST"]),
            Route("/jwks", self._jwks, methods=["GET"]),
            Route("/userinfo", self._userinfo, methods=["GET", "POST"]),
            Route("/google/.well-known/openid-configuration", self._google_discovery, methods=["GET"]),
            Route("/google/o/oauth2/v2/auth", self._google_authorize, methods=["GET"]),
            Route("/google/token", self._google_token, methods=["POST"]),
            Route("/google/v1/userinfo", self._google_userinfo, methods=["GET", "POST"]),
            Route("/google/oauth2/v3/certs", self._jwks, methods=["GET"]),
            Route("/microsoft/common/v2.0/.well-known/openid-configuration", self._microsoft_discovery,
                  methods=["GET"]),
            Route("/microsoft/common/oauth2/v2.0/authorize", self._microsoft_authorize, methods=["GET"]),
            Route("/microsoft/common/oauth2/v2.0/token", self._microsoft_token, methods=["POST"]),
            Route("/microsoft/oidc/userinfo", self._microsoft_userinfo, methods=["GET", "POST"]),
            Route("/microsoft/common/discovery/v2.0/keys", self._jwks, methods=["GET"]),
        ])

    @property
    def issuer(self) -> str:
        return self.base_url

    @property
    def google_issuer(self) -> str:
        return f"{self.base_url}/google"

    @property
    def microsoft_issuer(self) -> str:
        """The issuer Microsoft's multi-tenant discovery names ({tenantid}: each token's own tenant)."""
        return f"{self.base_url}/microsoft/{{tenantid}}/v2.0"

    @property
    def microsoft_discovery_base(self) -> str:
        return f"{self.base_url}/microsoft/common/v2.0"

    def user(self, login: str) -> FakeUser:
        return self._users[login]

    def svc_settings(self, protocol: str) -> dict[str, Any]:
        """Settings fields (Settings(**...) / model_copy(update=...)) that point svc at this fake."""
        common = {"idp_provider": protocol, "idp_client_id": self.client_id,
                  "idp_client_secret": self.client_secret}
        if protocol == GITHUB:
            return {**common, "idp_github_url": self.base_url, "idp_github_api_url": self.base_url}
        return {**common, "idp_issuer": self.issuer}

    # --- authorize (both protocols) ---

    async def _github_authorize(self, request: Request) -> Response:
        q = request.query_params
        return self._authorize(GITHUB, "", q.get("client_id"), q.get("redirect_uri"), q.get("state"),
                               q.get("scope") or "", q.get("code_challenge"), q.get("code_challenge_method"),
                               None, q.get("login") or q.get("login_hint"), q.get("fake_action"), True)

    async def _oidc_authorize(self, request: Request, issuer: str | None = None) -> Response:
        q = request.query_params
        return self._authorize(OIDC, issuer or self.issuer, q.get("client_id"), q.get("redirect_uri"),
                               q.get("state"), q.get("scope") or "", q.get("code_challenge"),
                               q.get("code_challenge_method"), q.get("nonce"), q.get("login_hint") or q.get("login"),
                               q.get("fake_action"), q.get("response_type") == "code")

    async def _google_authorize(self, request: Request) -> Response:
        return await self._oidc_authorize(request, self.google_issuer)

    async def _microsoft_authorize(self, request: Request) -> Response:
        return await self._oidc_authorize(request, self.microsoft_issuer)

    def _client(self, client_id: str | None) -> bool:
        return bool(client_id) and (self.any_client or client_id == self.client_id)

    def _redirect_ok(self, client_id: str | None, redirect_uri: str | None) -> bool:
        if not self._client(client_id) or not redirect_uri:
            return False
        if urlsplit(redirect_uri).scheme not in ("http", "https"):
            return False
        return self.redirect_uris is None or redirect_uri in self.redirect_uris

    def _authorize(self, protocol: str, issuer: str, client_id: str | None, redirect_uri: str | None, state: str | None,
                   scope: str, challenge: str | None, method: str | None, nonce: str | None,
                   login: str | None, action: str | None, code_flow: bool) -> Response:
        # RFC 6749 4.1.2.1: a bad client or redirect URI is shown to the user, never redirected to.
        if not self._client(client_id):
            return PlainTextResponse("unknown client_id", status_code=400)
        if not self._redirect_ok(client_id, redirect_uri):
            return PlainTextResponse("redirect_uri is not registered for this client", status_code=400)
        assert redirect_uri is not None and client_id is not None
        if not code_flow:
            return _back(redirect_uri, {"error": "unsupported_response_type", "state": state})
        if action == "deny":
            return _back(redirect_uri, {"error": "access_denied", "state": state,
                                        "error_description": "The user has denied your application access."})
        if protocol == OIDC and "openid" not in scope.split():
            return _back(redirect_uri, {"error": "invalid_scope", "state": state})
        if not challenge or method != "S256":
            return _back(redirect_uri, {"error": "invalid_request", "state": state,
                                        "error_description": "PKCE with S256 is required"})
        user = self._users.get(login or self.default_user)
        if user is None:
            return _back(redirect_uri, {"error": "access_denied", "state": state,
                                        "error_description": "no such test user"})
        code = secrets.token_urlsafe(24)
        self.issued.append(code)
        self._codes[code] = _Grant(protocol=protocol, issuer=issuer, client_id=client_id, redirect_uri=redirect_uri,
                                   challenge=challenge, nonce=nonce, scope=scope, user=user,
                                   expires=time.time() + CODE_SECONDS)
        return _back(redirect_uri, {"code": code, "state": state})

    # --- token endpoints ---

    def _redeem(self, protocol: str, form: dict[str, str], client_id: str | None,
                client_secret: str | None, issuer: str = "") -> tuple[_Grant | None, str]:
        if not self._client(client_id) or not client_secret or \
                not (self.any_client or secrets.compare_digest(client_secret, self.client_secret)):
            return None, "invalid_client"
        grant = self._codes.pop(form.get("code", ""), None)  # single use, whatever happens next
        if grant is None or grant.protocol != protocol or grant.issuer != issuer or \
                grant.client_id != client_id or grant.expires < time.time():
            return None, "invalid_grant"
        if form.get("redirect_uri") != grant.redirect_uri:
            return None, "redirect_uri_mismatch"
        verifier = form.get("code_verifier", "")
        if not 43 <= len(verifier) <= 128 or not secrets.compare_digest(_s256(verifier), grant.challenge):
            return None, "invalid_grant"
        return grant, ""

    def _access_token(self, grant: _Grant) -> str:
        prefix = "gho_" if grant.protocol == GITHUB else "fake_at_"
        token = prefix + secrets.token_urlsafe(24)
        self.issued.append(token)
        self._tokens[token] = _Access(protocol=grant.protocol, issuer=grant.issuer, user=grant.user, scope=grant.scope,
                                      expires=time.time() + TOKEN_SECONDS)
        return token

    async def _github_token(self, request: Request) -> Response:
        form = await _form(request)
        grant, error = self._redeem(GITHUB, form, form.get("client_id"), form.get("client_secret"))
        if grant is None:
            github_error = {"invalid_client": "incorrect_client_credentials",
                            "invalid_grant": "bad_verification_code"}.get(error, error)
            body: dict[str, str] = {"error": github_error,
                                    "error_description": github_error.replace("_", " ")}
        else:
            body = {"access_token": self._access_token(grant), "token_type": "bearer", "scope": grant.scope}
        # GitHub answers 200 either way; JSON only when asked for, form encoding otherwise.
        if "application/json" in request.headers.get("accept", ""):
            return JSONResponse(body)
        return PlainTextResponse(urlencode(body), media_type="application/x-www-form-urlencoded")

    async def _google_token(self, request: Request) -> Response:
        return await self._oidc_token(request, self.google_issuer)

    async def _microsoft_token(self, request: Request) -> Response:
        return await self._oidc_token(request, self.microsoft_issuer)

    async def _oidc_token(self, request: Request, issuer: str | None = None) -> Response:
        form = await _form(request)
        if form.get("grant_type") != "authorization_code":
            return _oauth_error("unsupported_grant_type", 400)
        client_id, client_secret = _basic_credentials(request)
        if client_id is None:
            client_id, client_secret = form.get("client_id"), form.get("client_secret")
        elif form.get("client_id") not in (None, client_id):
            return _oauth_error("invalid_request", 400)
        grant, error = self._redeem(OIDC, form, client_id, client_secret, issuer or self.issuer)
        if grant is None:
            return _oauth_error("invalid_grant" if error == "redirect_uri_mismatch" else error,
                                401 if error == "invalid_client" else 400)
        access_token = self._access_token(grant)
        return JSONResponse({"access_token": access_token, "token_type": "Bearer", "expires_in": TOKEN_SECONDS,
                             "scope": grant.scope, "id_token": self._id_token(grant)},
                            headers={"cache-control": "no-store"})

    def _id_token(self, grant: _Grant) -> str:
        now = int(time.time())
        iss = grant.issuer
        tenant: dict[str, str] = {}
        if iss == self.microsoft_issuer:
            iss = iss.replace("{tenantid}", MICROSOFT_TENANT)
            tenant = {"tid": MICROSOFT_TENANT}
        claims: dict[str, Any] = {
            "iss": iss, **tenant, "sub": grant.user.oidc_subject, "aud": grant.client_id, "azp": grant.client_id,
            "iat": now, "exp": now + 300, "auth_time": now, **self._profile(grant.user, grant.scope)}
        if grant.nonce is not None:
            claims["nonce"] = grant.nonce
        key = self.key
        tamper = self.id_token_tamper
        if tamper == "nonce":
            claims["nonce"] = "not-the-nonce"
        elif tamper == "aud":
            claims["aud"] = claims["azp"] = "another-client"
        elif tamper == "iss":
            claims["iss"] = "https://issuer.invalid"
        elif tamper == "exp":
            claims["iat"], claims["exp"] = now - 3600, now - 1800
        elif tamper == "signature":
            key = RSAKey.generate_key(2048, parameters={"kid": str(self.key.kid), "alg": "RS256"})
        return jwt.encode({"alg": "RS256", "kid": str(self.key.kid)}, claims, key)

    @staticmethod
    def _profile(user: FakeUser, scope: str) -> dict[str, Any]:
        scopes = scope.split()
        out: dict[str, Any] = {}
        if "profile" in scopes:
            out["preferred_username"] = user.login
            if user.name:
                out["name"] = user.name
        if "email" in scopes and user.email:
            out["email"] = user.email
            out["email_verified"] = user.email_verified
        return out

    # --- GitHub API ---

    def _bearer(self, request: Request, protocol: str) -> _Access | None:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() not in ("bearer", "token"):
            return None
        access = self._tokens.get(value.strip())
        if access is None or access.protocol != protocol or access.expires < time.time():
            return None
        return access

    async def _github_user(self, request: Request) -> Response:
        access = self._bearer(request, GITHUB)
        if access is None:
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        u = access.user
        return JSONResponse({"login": u.login, "id": u.id, "node_id": f"U_{u.id}", "type": "User",
                             "name": u.name, "email": u.email if u.email_public else None,
                             "avatar_url": f"{self.base_url}/avatars/{u.id}",
                             "html_url": f"{self.base_url}/{u.login}"})

    async def _github_emails(self, request: Request) -> Response:
        access = self._bearer(request, GITHUB)
        if access is None:
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        if "user:email" not in access.scope.split() and "user" not in access.scope.split():
            return JSONResponse({"message": "Not Found"}, status_code=404)
        u = access.user
        if not u.email:
            return JSONResponse([])
        return JSONResponse([{"email": u.email, "primary": True, "verified": u.email_verified,
                              "visibility": "public" if u.email_public else "private"}])

    # --- OpenID Connect metadata and userinfo ---

    async def _discovery(self, request: Request) -> Response:
        b = self.base_url
        return self._metadata(self.issuer, f"{b}/authorize", f"{b}/token", f"{b}/userinfo", f"{b}/jwks")

    async def _google_discovery(self, request: Request) -> Response:
        b = self.google_issuer
        return self._metadata(b, f"{b}/o/oauth2/v2/auth", f"{b}/token", f"{b}/v1/userinfo", f"{b}/oauth2/v3/certs")

    async def _microsoft_discovery(self, request: Request) -> Response:
        b = f"{self.base_url}/microsoft"
        return self._metadata(self.microsoft_issuer, f"{b}/common/oauth2/v2.0/authorize",
                              f"{b}/common/oauth2/v2.0/token", f"{b}/oidc/userinfo",
                              f"{b}/common/discovery/v2.0/keys")

    @staticmethod
    def _metadata(issuer: str, authorize: str, token: str, userinfo: str, jwks: str) -> Response:
        return JSONResponse({
            "issuer": issuer, "authorization_endpoint": authorize, "token_endpoint": token,
            "userinfo_endpoint": userinfo, "jwks_uri": jwks,
            "response_types_supported": ["code"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"], "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"], "grant_types_supported": ["authorization_code"],
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nonce", "name", "preferred_username",
                                 "email", "email_verified"],
        })

    async def _jwks(self, request: Request) -> Response:
        return JSONResponse({"keys": [self.key.as_dict(private=False)]})

    async def _google_userinfo(self, request: Request) -> Response:
        return await self._userinfo(request, self.google_issuer)

    async def _microsoft_userinfo(self, request: Request) -> Response:
        return await self._userinfo(request, self.microsoft_issuer)

    async def _userinfo(self, request: Request, issuer: str | None = None) -> Response:
        access = self._bearer(request, OIDC)
        if access is None or access.issuer != (issuer or self.issuer):
            return JSONResponse({"error": "invalid_token"}, status_code=401,
                                headers={"www-authenticate": 'Bearer error="invalid_token"'})
        return JSONResponse({"sub": access.user.oidc_subject, **self._profile(access.user, access.scope)})


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def _form(request: Request) -> dict[str, str]:
    """An application/x-www-form-urlencoded body (the only kind token endpoints take)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        return {}
    body = await request.body()
    try:
        return dict(parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=50))
    except (UnicodeDecodeError, ValueError):
        return {}


def _basic_credentials(request: Request) -> tuple[str | None, str | None]:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None, None
    return unquote_plus(user), unquote_plus(password)


def _oauth_error(error: str, status: int) -> JSONResponse:
    return JSONResponse({"error": error}, status_code=status, headers={"cache-control": "no-store"})


def _back(redirect_uri: str, params: dict[str, str | None]) -> RedirectResponse:
    parts = urlsplit(redirect_uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [(k, v) for k, v in params.items() if v is not None]
    return RedirectResponse(urlunsplit(parts._replace(query=urlencode(query))), status_code=302)


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside another program's event loop: leave the program's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@contextlib.asynccontextmanager
async def running_fake_idp(fake: FakeIdp | None = None, *, host: str = "127.0.0.1",
                           port: int = 0) -> AsyncIterator[FakeIdp]:
    """Serve `fake` (a new FakeIdp by default) in a background task; yields it with base_url set."""
    fake = fake or FakeIdp()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    fake.base_url = f"http://{host}:{sock.getsockname()[1]}"
    server = _EmbeddedServer(uvicorn.Config(fake.app, log_level="warning", access_log=False, lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]), name="fake-idp")
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the fake identity provider did not start")
            await asyncio.sleep(0.01)
        yield fake
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m svc.adapters.idp.fake",
                                     description="A fake GitHub OAuth app + OpenID Connect issuer for development")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9900)
    parser.add_argument("--client-id", default="svc-dev")
    parser.add_argument("--client-secret", default="svc-dev-secret")
    parser.add_argument("--user", default="alice", help="the user the authorize pages sign in by default")
    args = parser.parse_args(argv)
    fake = FakeIdp(client_id=args.client_id, client_secret=args.client_secret, default_user=args.user)
    fake.base_url = f"http://{args.host}:{args.port}"
    users = ", ".join(f"{u.login}{'' if u.email else ' (no email)'}" for u in fake.users)
    print(f"fake identity provider at {fake.base_url}  (users: {users}; pick one with ?login_hint=NAME)")
    for protocol in (GITHUB, OIDC):
        print(f"\n# svc settings for {protocol}:")
        for key, value in fake.svc_settings(protocol).items():
            print(f"export SVC_{key.upper()}={value}")
    print(flush=True)
    uvicorn.run(fake.app, host=args.host, port=args.port, log_level="info")


if __name__ == "__main__":
    main()
