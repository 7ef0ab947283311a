"""The HTTP client of the `svc` command: calls to the API (over svc.cli.transport), and the errors it raises.

The client speaks to the API over HTTP only; it never imports the server's modules. The standard
library's `http.client` is imported when the first request is made, not when a command module is
loaded, so `svc --help` and the errors found before any request start fast (see "Start-up time" in
docs/cli.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import typer

from svc.cli import credentials, transport

if TYPE_CHECKING:
    from svc.cli.transport import Response

DEFAULT_API_URL = "http://localhost:8080"
USER_AGENT = "svc-cli/0.1"
CONNECT_SECONDS = 10.0
READ_SECONDS = 30.0

# Where --api-url came from (CliState.api_url_origin): the hints name what the user should check.
FROM_OPTION, FROM_ENV, FROM_DEFAULT = "--api-url", "SVC_API_URL", "default"


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

    def __init__(self, status: int, message: str, code: str, details: Any = None, hint: str | None = None) -> None:
        if hint is None and status == 401 and code == "unauthorized":
            hint = "run `svc login` to sign in again (or check SVC_TOKEN)"
        super().__init__(message, code, details=details, hint=hint)
        self.status = status


class ConnectionFailed(CliError):
    """The API could not be reached at all (`connection_failed`), or what answers at the address is
    not an svc API (`not_svc_api`): exit status 2."""

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
    api_url_origin: str = FROM_DEFAULT


def state(ctx: typer.Context) -> CliState:
    found = ctx.find_object(CliState)
    return found if found is not None else CliState()


def env_token() -> str | None:
    token = os.environ.get("SVC_TOKEN", "").strip()
    return token or None


def where_hint(base_url: str, origin: str, *, answered: bool = False) -> str:
    """How to point svc at the right server, naming where the address came from."""
    if answered:
        fix = "it must be the address of the svc API (the `API:` line `svc serve` prints), not a web page's"
    else:
        fix = "or start the server: `make run` in an svc checkout, or `svc serve`"
    if origin == FROM_ENV:
        return f"SVC_API_URL is set to {base_url}: check it (or pass --api-url URL); {fix}"
    if origin == FROM_OPTION:
        return f"check the address given with --api-url ({base_url}); {fix}"
    return (f"no --api-url or SVC_API_URL was given, so svc used {base_url}: set SVC_API_URL to your server's "
            f"address; {fix}")


def unreachable_reason(exc: BaseException, base_url: str) -> str:
    """What went wrong, in words: refused, a name that does not resolve, TLS, a timeout."""
    import socket
    import ssl

    if isinstance(exc, transport.ConnectTimeout):
        return f"no connection within {CONNECT_SECONDS:g} s (timeout)"
    if isinstance(exc, transport.ReadTimeout):
        return f"it accepted the connection but sent no answer within {READ_SECONDS:g} s (timeout)"
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        for found in (cause, *(a for a in getattr(cause, "args", ()) if isinstance(a, BaseException))):
            if isinstance(found, socket.gaierror):
                host = urlsplit(base_url).hostname or base_url
                return f"the host name {host} does not resolve (DNS: {found.strerror or found})"
            if isinstance(found, ConnectionRefusedError):
                return "connection refused (nothing listens at that address and port)"
            if isinstance(found, ssl.SSLError):
                return f"the TLS handshake failed ({getattr(found, 'reason', None) or found})"
        cause = cause.__cause__ or cause.__context__
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused (nothing listens at that address and port)"
    if "name or service not known" in text.lower() or "name resolution" in text.lower():
        return f"the host name {urlsplit(base_url).hostname} does not resolve (DNS)"
    return text


def unreachable(exc: BaseException, base_url: str, origin: str = FROM_DEFAULT) -> ConnectionFailed:
    return ConnectionFailed(f"Cannot reach the svc API at {base_url}: {unreachable_reason(exc, base_url)}",
                            "connection_failed", hint=where_hint(base_url, origin))


class Api:
    """Calls to one API address. `auth=False` calls send no credential (config, dev login, invite preview)."""

    def __init__(self, base_url: str, token: str | None, *, origin: str = FROM_DEFAULT) -> None:
        self.base_url = base_url
        self.token = token
        self.origin = origin
        # Connections are opened at the first request (http.client is imported then); an http://
        # API never loads a certificate store.
        self.http = transport.Client(base_url, headers={"user-agent": USER_AGENT}, connect_seconds=CONNECT_SECONDS,
                                     read_seconds=READ_SECONDS)

    @classmethod
    def for_context(cls, ctx: typer.Context) -> Api:
        """The API of `--api-url`, with SVC_TOKEN if set, else the credential stored for that address."""
        st = state(ctx)
        token = env_token()
        if token is None:
            stored = credentials.load(st.api_url)
            token = stored.token if stored else None
        return cls(st.api_url, token, origin=st.api_url_origin)

    @classmethod
    def anonymous(cls, ctx: typer.Context) -> Api:
        """The API of `--api-url`, without any credential (config, dev login, invite preview)."""
        st = state(ctx)
        return cls(st.api_url, None, origin=st.api_url_origin)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, *, params: dict[str, Any] | None = None, auth: bool = True) -> Any:
        return self.request("GET", path, params=params, auth=auth)

    def post(self, path: str, body: Any = None, *, auth: bool = True, idempotency_key: str | None = None) -> Any:
        return self.request("POST", path, body=body, auth=auth, idempotency_key=idempotency_key)

    def put(self, path: str, body: Any = None) -> Any:
        return self.request("PUT", path, body=body)

    def patch(self, path: str, body: Any = None) -> Any:
        return self.request("PATCH", path, body=body)

    def delete(self, path: str, body: Any = None) -> Any:
        return self.request("DELETE", path, body=body)

    def raw(self, method: str, path: str, *, params: dict[str, Any] | None = None,
            token: str | None = None) -> Response:
        """One request whose answer the caller inspects itself (status, headers); transport errors still raise."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        try:
            return self.http.request(method, path, params=params, headers=headers)
        except transport.TransportError as exc:
            raise unreachable(exc, self.base_url, self.origin) from None

    def request(self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None,
                auth: bool = True, token: str | None = None, idempotency_key: str | None = None) -> Any:
        """The decoded JSON body of a 2xx answer (None for 204); an ApiError for anything else. With
        an `idempotency_key` (sent as Idempotency-Key), the server does the request once however
        often it is sent, so it too goes again when its connection drops."""
        headers: dict[str, str] = {"accept": "application/json"}
        if idempotency_key is not None:
            headers["idempotency-key"] = idempotency_key
        bearer = token or (self.token if auth else None)
        if auth and not bearer:
            raise self.not_signed_in()
        if bearer:
            headers["authorization"] = f"Bearer {bearer}"
        for attempt in (1, 2):
            try:
                r = self.http.request(method, path, json=body, params=params, headers=headers)
                break
            except transport.Dropped as exc:
                # A kept-alive connection the server closed as this request went out: a request that
                # changes nothing goes again, once, on a new connection (as urllib3 does).
                if (method not in ("GET", "HEAD") and idempotency_key is None) or attempt == 2:
                    raise unreachable(exc, self.base_url, self.origin) from None
            except transport.TransportError as exc:
                raise unreachable(exc, self.base_url, self.origin) from None
        return decode(r, self.base_url, self.origin)

    def not_signed_in(self) -> CliError:
        """`not_signed_in`, once the address is known to be an svc API: no credential is stored for
        an address that is wrong, so that is what to report first (connection_failed, not_svc_api)."""
        self.request("GET", "/v1/config", auth=False)  # raises when unreachable or not an svc API
        return CliError(f"Not signed in to {self.base_url}", "not_signed_in",
                        hint="run `svc login` (or set SVC_TOKEN)")


def _looks_like(r: Response) -> str:
    kind = r.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if "html" in kind:
        return "an HTML page"
    if not r.content:
        return "an empty body"
    return f"a body of type {kind}" if kind else "a body that is not JSON"


def decode(r: Response, base_url: str | None = None, origin: str = FROM_DEFAULT) -> Any:
    """The JSON body of a 2xx answer; the Error envelope of anything else as an ApiError. An answer
    that no svc API gives (a redirect, an HTML page, a 4xx without the envelope) is `not_svc_api`."""
    if base_url is None:
        parts = urlsplit(r.url)
        base_url = f"{parts.scheme}://{parts.netloc}"
    if r.status_code == 204 or (r.is_success and not r.content):
        return None
    try:
        data = r.json()
    except ValueError:
        data = None
    what = f"{r.method} {r.path}"
    if r.is_success:
        if data is None:
            raise not_svc_api(base_url, origin, f"{what} answered HTTP {r.status_code} with {_looks_like(r)}")
        return data
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        message = data.get("message")
        raise ApiError(r.status_code, message if isinstance(message, str) and message else data["code"],
                       data["code"], data.get("details"))
    if r.is_redirect:
        where = r.headers.get("location", "elsewhere")
        raise not_svc_api(base_url, origin, f"{what} answered with a redirect (HTTP {r.status_code}) to {where}",
                          hint="if the svc API lives at that address, use it as --api-url / SVC_API_URL")
    if r.status_code >= 500:
        # A proxy or gateway in front of the API (502, 503, 504) with its own page: the API is behind it.
        raise ApiError(r.status_code, f"The server answered HTTP {r.status_code} {r.reason_phrase}".strip(),
                       f"http_{r.status_code}",
                       hint="a proxy or gateway answered for the svc API; check that the svc server behind it runs")
    raise not_svc_api(base_url, origin, f"{what} answered HTTP {r.status_code} {r.reason_phrase} with "
                      f"{_looks_like(r)}, not the API's Error body")


def not_svc_api(base_url: str, origin: str, answer: str, *, hint: str | None = None) -> ConnectionFailed:
    return ConnectionFailed(f"The server at {base_url} does not look like an svc API: {answer}", "not_svc_api",
                            hint=hint or where_hint(base_url, origin, answered=True))
