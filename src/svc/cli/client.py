"""The HTTP client of the `svc` command: one small wrapper over httpx, and the errors it raises.

The client speaks to the API over HTTP only; it never imports the server's modules.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import typer

from svc.cli import credentials

DEFAULT_API_URL = "http://localhost:8080"
USER_AGENT = "svc-cli/0.1"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


class CliError(Exception):
    """A failure the command reports as `error: <message> (<code>)` and exit status 1."""

    exit_code = 1

    def __init__(self, message: str, code: str, *, details: Any = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = details
        self.hint = hint


class ApiError(CliError):
    """The API answered with its Error envelope (or with something that is not JSON)."""

    def __init__(self, status: int, message: str, code: str, details: Any = None) -> None:
        hint = None
        if status == 401 and code == "unauthorized":
            hint = "run `svc login` to sign in again (or check SVC_TOKEN)"
        super().__init__(message, code, details=details, hint=hint)
        self.status = status


class ConnectionFailed(CliError):
    """The API could not be reached at all: exit status 2."""

    exit_code = 2


def normalize_url(url: str) -> str:
    """`HTTP://Host:8080/v1/` -> `http://host:8080`: the key of the credential store, the base of every path."""
    raw = url.strip()
    parts = urlsplit(raw)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise typer.BadParameter(f"{url!r} is not an http:// or https:// address", param_hint="--api-url")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}"


def seg(value: str) -> str:
    """One path segment, escaped (slugs, ids and invite tokens never become extra path parts)."""
    return quote(value, safe="")


@dataclass
class CliState:
    """What the root options decided, shared with every command through the click context."""

    api_url: str = DEFAULT_API_URL


def state(ctx: typer.Context) -> CliState:
    found = ctx.find_object(CliState)
    return found if found is not None else CliState()


def env_token() -> str | None:
    token = os.environ.get("SVC_TOKEN", "").strip()
    return token or None


class Api:
    """Calls to one API address. `auth=False` calls send no credential (config, dev login, invite preview)."""

    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url
        self.token = token
        self._http = httpx.Client(base_url=base_url, timeout=TIMEOUT, headers={"user-agent": USER_AGENT},
                                  follow_redirects=False)

    @classmethod
    def for_context(cls, ctx: typer.Context) -> Api:
        """The API of `--api-url`, with SVC_TOKEN if set, else the credential stored for that address."""
        url = state(ctx).api_url
        token = env_token()
        if token is None:
            stored = credentials.load(url)
            token = stored.token if stored else None
        return cls(url, token)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, *, params: dict[str, Any] | None = None, auth: bool = True) -> Any:
        return self.request("GET", path, params=params, auth=auth)

    def post(self, path: str, body: Any = None, *, auth: bool = True) -> Any:
        return self.request("POST", path, body=body, auth=auth)

    def put(self, path: str, body: Any = None) -> Any:
        return self.request("PUT", path, body=body)

    def patch(self, path: str, body: Any = None) -> Any:
        return self.request("PATCH", path, body=body)

    def delete(self, path: str, body: Any = None) -> Any:
        return self.request("DELETE", path, body=body)

    def raw(self, method: str, path: str, *, params: dict[str, Any] | None = None,
            token: str | None = None) -> httpx.Response:
        """One request whose answer the caller inspects itself (status, headers); transport errors still raise."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        try:
            return self._http.request(method, path, params=params, headers=headers)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None

    def request(self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None,
                auth: bool = True, token: str | None = None) -> Any:
        """The decoded JSON body of a 2xx answer (None for 204); an ApiError for anything else."""
        headers: dict[str, str] = {"accept": "application/json"}
        bearer = token or (self.token if auth else None)
        if auth and not bearer:
            raise CliError(f"Not signed in to {self.base_url}", "not_signed_in",
                           hint="run `svc login` (or set SVC_TOKEN)")
        if bearer:
            headers["authorization"] = f"Bearer {bearer}"
        try:
            r = self._http.request(method, path, json=body, params=params, headers=headers)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        return decode(r)

    def _unreachable(self, exc: httpx.TransportError) -> ConnectionFailed:
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            reason = f"no answer in time ({type(exc).__name__})"
        return ConnectionFailed(f"Cannot reach the svc API at {self.base_url}: {reason}", "connection_failed",
                                hint="check --api-url / SVC_API_URL and that the server is running")


def decode(r: httpx.Response) -> Any:
    if r.status_code == 204 or (r.is_success and not r.content):
        return None
    try:
        data = r.json()
    except ValueError:
        data = None
    if r.is_success:
        if data is None:
            raise ApiError(r.status_code, f"The server answered HTTP {r.status_code} without JSON", "bad_response")
        return data
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        message = data.get("message")
        raise ApiError(r.status_code, message if isinstance(message, str) and message else data["code"],
                       data["code"], data.get("details"))
    raise ApiError(r.status_code, f"The server answered HTTP {r.status_code} {r.reason_phrase}".strip(),
                   f"http_{r.status_code}")
