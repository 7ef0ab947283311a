"""The `svc` command's HTTP/1.1 client, on the standard library's `http.client`.

Every `svc` command is a new process, and what it imports is most of what it costs: httpx (with
httpcore, and the command-line tool its package imports, with click, Rich and pygments) was half of
`svc whoami`'s start-up; `http.client` is a fifth of that, and the client needs no more than it
gives: JSON requests to one API, a streamed upload, kept-alive connections, no redirects followed.
This module imports nothing heavy itself (`svc --help` never loads `http.client`).

Like httpx, it takes a proxy from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, minus
`NO_PROXY`), and verifies TLS against the system's certificate store (or `SSL_CERT_FILE` /
`SSL_CERT_DIR`). A failure is a TransportError whose `__cause__` is the error underneath (refused,
a name that does not resolve, TLS), and it says where it happened: ConnectTimeout and ConnectFailed
before a connection, ReadTimeout after it, Dropped when a connection closed before any answer.
"""

from __future__ import annotations

import json as jsonlib
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode, urlsplit

if TYPE_CHECKING:
    import http.client
    from email.message import Message


class TransportError(Exception):
    """No answer came: the error underneath is the `__cause__`."""


class ConnectFailed(TransportError):
    """No connection: refused, a name that does not resolve, a failed TLS handshake."""


class ConnectTimeout(ConnectFailed):
    """No connection within the connect timeout."""


class ReadTimeout(TransportError):
    """Connected, but the request could not be sent or answered within the read timeout."""


class Dropped(TransportError):
    """The connection closed before any answer began (a kept-alive one the server had closed)."""


@dataclass
class Response:
    method: str
    url: str
    status_code: int
    reason_phrase: str
    headers: Message
    content: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def is_redirect(self) -> bool:
        return self.status_code in (301, 302, 303, 307, 308) and "location" in self.headers

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not."""
        return jsonlib.loads(self.content)


class Streamed:
    """An answer whose body has not been read yet (Client.stream)."""

    def __init__(self, method: str, url: str, answer: http.client.HTTPResponse,
                 conn: http.client.HTTPConnection) -> None:
        self.method, self.url = method, url
        self.status_code, self.reason_phrase, self.headers = answer.status, answer.reason, answer.headers
        self._answer, self._conn = answer, conn
        self.done = False

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    def chunks(self, size: int = 64 * 1024) -> Iterator[bytes]:
        """The body as it arrives, in chunks of at most `size` bytes."""
        try:
            while chunk := self._answer.read(size):
                yield chunk
        except BaseException as exc:
            self._conn.close()
            failure = _failure(exc)
            if failure is exc:
                raise
            raise failure from exc
        self.done = True

    def whole(self) -> Response:
        """The answer with its whole body (an error's, or a small one)."""
        body = b"".join(self.chunks())
        return Response(self.method, self.url, self.status_code, self.reason_phrase, self.headers, body)


def _query_value(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return "" if value is None else str(value)


def _proxy_for(scheme: str, host: str) -> str | None:
    """The proxy the environment names for this address, if any (NO_PROXY respected)."""
    names = {"http_proxy", "https_proxy", "all_proxy"}
    if not any(k.lower() in names for k in os.environ):
        return None
    import urllib.request  # only when a proxy is set: it costs more than http.client

    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


class Client:
    """Requests to one address (`base_url`; a full URL given to request() may name another), over
    kept-alive connections shared by threads. Redirects are answers, never followed."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str] | None = None, connect_seconds: float = 10.0,
                 read_seconds: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self.connect_seconds = connect_seconds
        self.read_seconds = read_seconds
        self._idle: dict[tuple[str, str], list[tuple[http.client.HTTPConnection, dict[str, str] | None]]] = {}
        self._lock = threading.Lock()

    def request(self, method: str, url: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
                content: bytes | Iterable[bytes] | None = None, headers: Mapping[str, str] | None = None,
                read_seconds: float | None = None) -> Response:
        """One request: `url` is a path under base_url, or a full URL. `json` is sent as JSON; `content`
        as it is (an iterable of chunks is streamed: give its Content-Length in `headers`)."""
        with self.stream(method, url, params=params, json=json, content=content, headers=headers,
                         read_seconds=read_seconds) as answer:
            return answer.whole()

    @contextmanager
    def stream(self, method: str, url: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
               content: bytes | Iterable[bytes] | None = None, headers: Mapping[str, str] | None = None,
               read_seconds: float | None = None) -> Iterator[Streamed]:
        """request(), with the answer's body read by the caller (`Streamed.chunks()`: a download never
        held whole in memory). The connection is kept for the next request only when the body was
        read to its end; otherwise it is closed when the block ends."""
        full = url if "://" in url else self.base_url + url
        if params:
            query = urlencode([(k, _query_value(item)) for k, v in params.items()
                               for item in (v if isinstance(v, list | tuple) else [v])])
            full += ("&" if "?" in full else "?") + query
        parts = urlsplit(full)
        sent = {k.lower(): v for k, v in self.headers.items()}
        sent |= {k.lower(): v for k, v in (headers or {}).items()}
        if json is not None:
            content = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            sent.setdefault("content-type", "application/json")
        key = (parts.scheme, parts.netloc)
        with self._lock:
            idle = self._idle.get(key)
            route = idle.pop() if idle else None
        if route is not None and _closed_by_peer(route[0]):
            route[0].close()  # reconnected below, as a new one would be
        conn, proxy_headers = route or self._open(parts)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        if proxy_headers is not None:  # plain http through a proxy: the full URL, and its credentials
            target = parts.geturl()
            sent |= proxy_headers
        try:
            if conn.sock is None:  # new, or closed by the last answer (Connection: close)
                self._connect(conn)
            conn.sock.settimeout(self.read_seconds if read_seconds is None else read_seconds)  # type: ignore[union-attr]
            try:
                conn.request(method, target, body=content, headers=sent)
            except (BrokenPipeError, ConnectionResetError):
                # The server answered before taking the whole body (an upload refused from its
                # headers: too large, no room): its answer may be waiting; if not, the error stands.
                if content is None or isinstance(content, bytes):
                    raise
            answer = conn.getresponse()
        except BaseException as exc:
            conn.close()
            failure = _failure(exc)
            if failure is exc:
                raise
            raise failure from exc
        streamed = Streamed(method, full, answer, conn)
        try:
            yield streamed
        except BaseException:
            conn.close()
            raise
        if streamed.done:  # a connection the answer closed is opened again at its next use
            with self._lock:
                self._idle.setdefault(key, []).append((conn, proxy_headers))
        else:
            conn.close()

    def _open(self, parts: Any) -> tuple[http.client.HTTPConnection, dict[str, str] | None]:
        """A new connection to this address, through the environment's proxy if it names one; and the
        headers for a plain-http proxy (None when the request goes to the server itself, or through a
        CONNECT tunnel)."""
        import http.client

        https = parts.scheme == "https"
        host, port = parts.hostname or "", parts.port or (443 if https else 80)
        proxy = _proxy_for(parts.scheme, host)
        context = _tls() if https else None
        if proxy is None:
            if https:
                return http.client.HTTPSConnection(host, port, timeout=self.connect_seconds, context=context), None
            return http.client.HTTPConnection(host, port, timeout=self.connect_seconds), None
        p = urlsplit(proxy)
        auth: dict[str, str] = {}
        if p.username is not None:
            import base64

            user = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
            auth["proxy-authorization"] = "Basic " + base64.b64encode(user).decode()
        proxy_host, proxy_port = p.hostname or "", p.port or 80
        if https:  # a tunnel through the proxy (CONNECT), TLS to the server inside it
            conn = http.client.HTTPSConnection(proxy_host, proxy_port, timeout=self.connect_seconds, context=context)
            conn.set_tunnel(host, port, headers=auth)
            return conn, None
        return http.client.HTTPConnection(proxy_host, proxy_port, timeout=self.connect_seconds), auth

    def _connect(self, conn: http.client.HTTPConnection) -> None:
        try:
            conn.connect()
        except BaseException as exc:
            conn.close()
            if isinstance(exc, TimeoutError):
                raise ConnectTimeout(str(exc) or "timed out") from exc
            if isinstance(exc, OSError):
                raise ConnectFailed(str(exc) or type(exc).__name__) from exc
            raise

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn, _ in conns:
                conn.close()


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """A kept-alive connection the server has closed since (its keep-alive timeout): readable while
    idle means its end of the stream, or bytes nobody asked for. Sending on it would fail."""
    import select

    if conn.sock is None:
        return False
    try:
        readable, _, _ = select.select([conn.sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _failure(exc: BaseException) -> BaseException:
    """The TransportError for an error after connecting (others, like Ctrl-C, as they are)."""
    import http.client

    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, TimeoutError):
        return ReadTimeout(str(exc) or "timed out")
    if isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
        return Dropped(str(exc) or type(exc).__name__)
    if isinstance(exc, OSError | http.client.HTTPException):
        return TransportError(str(exc) or type(exc).__name__)
    return exc


def _tls() -> Any:
    """TLS with verification against the system's store (OpenSSL reads SSL_CERT_FILE, SSL_CERT_DIR)."""
    import ssl

    return ssl.create_default_context()


def get(url: str, *, headers: Mapping[str, str] | None = None, seconds: float = 10.0) -> Response:
    """One GET of a full URL on a connection of its own."""
    client = Client(url, connect_seconds=seconds, read_seconds=seconds)
    try:
        return client.request("GET", url, headers=headers)
    finally:
        client.close()
