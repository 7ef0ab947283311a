"""Renders the edge's nginx.conf (one file: settings and the server blocks) with the Jinja2 template
templates/nginx.conf.j2. The config holds no host: which host serves what is in the host links
(svc/edge/links.py), read by nginx per request, so the config changes only with its shape (the
listen address, the check cache, the API's address) and a deploy never reloads nginx. Pure: the
same options always give the same text, so "changed" is a string comparison and the config id (a
hash of the text) tells which config a worker serves. Values are checked and quoted here
(quote()); the template only lays them out.

Layout of a request (docs/edge.md "How a request finds its site"):
- the host's link, EDGE/hosts/<host>, is resolved ($realpath_root); where it leads says what the
  host is (EdgeLayout: a site's assets/ for a public project, a gate directory for a protected one,
  void/none, void/pending, void/unknown) and the files are served under that real path;
- protected hosts go through `auth_request` against the API's /v1/edge/check, its 204 answers
  cached in memory per host + gate (access generation and live deployment) + svc_access cookie +
  a fingerprint of the bypass header;
- 404s: the deployment's own /404.html when it has one, else the edge's: a page (templates/pages/,
  installed into <edge>/pages/) for browsers, the JSON Error envelope for API clients.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import jinja2

from svc.edge import tls
from svc.edge.traffic import LOG_FORMAT as TRAFFIC_FORMAT

# The status probe's Host: not a DNS name (underscore), so no project can own it.
STATUS_HOST = "_svc-edge-status"
STATUS_PATH = "/config"
CHECK_PATH = "/__svc/_check"
# Where svc_auth.lua asks the auth service to renew the signed-in user's cookie (internal only).
AUTH_RENEW_PATH = "/__svc-auth-renew"
# Where a pending hostname's browser request goes (internal): the API's /v1/edge/pending-host.
PENDING_PATH = "/__svc/_pending"
_ID_PLACEHOLDER = "@@SVC_CONFIG_ID@@"
MIME_TYPES = Path("/etc/nginx/mime.types")
TEMPLATES = Path(__file__).parent / "templates"
LUA = Path(__file__).parent / "lua"
# The status probe's and the control server's Host: not DNS names (underscore), no project's.
CONTROL_HOST = "_svc-edge-control"
# The server the worker runtime reads the deployments' files from (env.ASSETS; loopback, its token).
ASSETS_HOST = "_svc-runtime-assets"
CONTROL_PATH = "/routes"
# The control server's path of the traffic counts (GET: what was counted since the last time).
CONTROL_TRAFFIC_PATH = "/traffic"
# The control server's path of the certificates' changes (POST: lua/svc_tls.lua's lines).
CONTROL_CERTS_PATH = "/certs"
# nginx's Lua module and the module it needs (Debian: libnginx-mod-http-lua, -ndk), loaded in order.
LUA_MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")
MODULE_DIRS = (Path("/usr/lib/nginx/modules"), Path("/usr/lib64/nginx/modules"), Path("/usr/local/nginx/modules"),
               Path("/usr/share/nginx/modules"))
# The routing table's shared memory: about 400 bytes a host, so room for ~300,000 hosts (only
# what is used is resident).
ROUTES_MEMORY = "128m"
# The edge's own 404 pages for browsers (file names under templates/pages/ and <edge>/pages/).
PAGES = {"unknown_host": "unknown-host.html", "no_deployment": "no-deployment.html", "not_found": "not-found.html"}
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
# The check cache's shared memory (nginx's, never a file: its keys hold credentials): a few
# hundred bytes an allowed visitor, the least recently used dropped when full.
CHECK_CACHE_MEMORY = "4m"
# The traffic counts' shared memory: five numbers a host and minute, from the nginx workers' own
# tables every second, until svc collects them (every second too).
TRAFFIC_MEMORY = "16m"
# The certificates' shared memory: about 4 KB a certificate (chain, key, OCSP answer), so room for
# ~8,000 (only what is used is resident).
CERTS_MEMORY = "32m"

# Text types compressed on the fly when the client accepts gzip (text/html always is).
GZIP_TYPES = (
    "text/plain text/css text/xml text/javascript text/markdown text/csv application/javascript "
    "application/json application/manifest+json application/xml application/rss+xml application/atom+xml "
    "application/wasm image/svg+xml image/x-icon font/ttf font/otf")
# Used when /etc/nginx/mime.types is missing (a non-Debian nginx).
FALLBACK_TYPES = {
    "text/html": "html htm", "text/css": "css", "text/plain": "txt", "text/xml": "xml",
    "text/markdown": "md", "text/csv": "csv", "application/javascript": "js mjs", "application/json": "json map",
    "application/manifest+json": "webmanifest", "application/wasm": "wasm", "application/pdf": "pdf",
    "application/zip": "zip", "image/svg+xml": "svg svgz", "image/png": "png", "image/jpeg": "jpg jpeg",
    "image/gif": "gif", "image/webp": "webp", "image/avif": "avif", "image/x-icon": "ico", "font/woff": "woff",
    "font/woff2": "woff2", "font/ttf": "ttf", "font/otf": "otf", "audio/mpeg": "mp3", "video/mp4": "mp4",
    "video/webm": "webm",
}
# Debian's mime.types lacks these; `types` blocks add to it.
EXTRA_TYPES = {"application/javascript": "mjs", "application/manifest+json": "webmanifest",
               "text/markdown": "md", "application/json": "map"}


class EdgeConfigError(ValueError):
    """The config cannot be rendered (e.g. a data directory path nginx cannot quote)."""


def _error_body(code: str, message: str) -> str:
    return json.dumps({"code": code, "message": message, "details": None}, separators=(",", ":"))


UNKNOWN_HOST_BODY = _error_body("unknown_hostname", "No project is served at this hostname")
PENDING_HOST_BODY = _error_body("unknown_hostname", "This hostname is not served yet: its owner has not proven "
                                "control of its DNS (see the project hostnames)")
NO_DEPLOYMENT_BODY = _error_body("not_found", "This project has no deployment yet")
NOT_FOUND_BODY = _error_body("not_found", "No such file in this deployment")
METHOD_BODY = _error_body("method_not_allowed", "Only GET and HEAD are served here")
UNAUTHORIZED_BODY = _error_body("unauthorized", "Sign-in is required for this site")
INTERNAL_BODY = _error_body("internal", "The edge could not complete the request")


@dataclass(frozen=True)
class EdgeLayout:
    """Every file of one svc process's edge, under SVC_DATA_DIR/edge/."""

    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "nginx.conf"

    @property
    def candidate(self) -> Path:
        return self.root / "nginx.conf.new"

    @property
    def pid(self) -> Path:
        return self.root / "nginx.pid"

    @property
    def error_log(self) -> Path:
        return self.root / "error.log"

    @property
    def stderr_log(self) -> Path:
        return self.root / "stderr.log"

    @property
    def traffic_log(self) -> Path:
        return self.root / "traffic.log"

    @property
    def temp(self) -> Path:
        return self.root / "tmp"

    @property
    def old_check_cache(self) -> Path:
        """Where earlier versions kept the check cache, on disk (removed at start)."""
        return self.root / "check-cache"

    @property
    def pages(self) -> Path:
        return self.root / "pages"

    @property
    def routes(self) -> Path:
        """The routing table's snapshot (svc/edge/routes.py), read by nginx at start and reload."""
        return self.root / "routes"

    @property
    def routes_log(self) -> Path:
        """The routing table's changes since the snapshot."""
        return self.root / "routes.log"

    @property
    def certs(self) -> Path:
        """The certificates' table and the TLS listener's placeholder (tls.py), 0700."""
        return self.root / "certs"

    @property
    def lua(self) -> Path:
        """The Lua module nginx runs (installed from lua/ at every start)."""
        return self.root / "lua"

    @property
    def void(self) -> Path:
        return self.root / "void"

    @property
    def void_unknown(self) -> Path:
        return self.void / "unknown"

    @property
    def void_none(self) -> Path:
        return self.void / "none"

    @property
    def void_pending(self) -> Path:
        return self.void / "pending"

    def prepare(self) -> None:
        for path in (self.root, self.temp, self.void_unknown, self.void_none, self.void_pending, self.pages,
                     self.lua):
            path.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        # Its keys held whole Cookie headers and bypass secrets, on disk.
        shutil.rmtree(self.old_check_cache, ignore_errors=True)
        install_pages(self)
        install_lua(self)


@dataclass(frozen=True)
class EdgeOptions:
    listen_host: str
    listen_port: int
    # The svc API the edge asks (auth_request) and proxies /__svc/ to: http://host:port.
    api_url: str
    check_cache_seconds: int
    worker_processes: int = 1
    # The structured access log of project hosts (traffic.py), when svc keeps their traffic.
    traffic_log: Path | None = None
    # "user group" for the workers when nginx starts as root (else None: workers keep the user).
    user: str | None = None
    mime_types: Path | None = MIME_TYPES
    # Modules to load (nginx's Lua module: lua_modules()); empty when compiled in.
    modules: tuple[Path, ...] = ()
    # What svc sends with each change of the routing table (X-Svc-Edge-Token); made per start.
    control_token: str = ""
    # Starts every request id of this nginx (request_id()); made per start.
    request_id_prefix: str = "0"
    # The worker runtime's processes (host:port each; nginx's upstreams svc_worker_<n>), the token
    # they expect (X-Svc-Runtime-Token) and how long a worker may take to start its answer.
    workers: tuple[str, ...] = ()
    # The directory of the steady workers' unix sockets (<slot>.sock: one project's worker each,
    # nothing of svc's in front; the runtime's steady.py), which upstream svc_steady connects to.
    worker_sockets: str = ""
    runtime_token: str = ""
    worker_timeout_seconds: int = 30
    # The unpacked bundles (SVC_DATA_DIR/sites): the runtime reads a deployment's assets/ here.
    sites: Path | None = None
    # TLS (docs/tls.md): the port of the https listener (None: http only); its certificates are
    # the table in nginx's memory (tls.py, lua/svc_tls.lua), picked per handshake by SNI.
    tls_port: int | None = None
    # Strict-Transport-Security's max-age on https answers (0: not sent).
    hsts_seconds: int = 0
    # SVC_PUBLIC_URL's host, when the edge fronts the dashboard and API there (Settings.console_host).
    console_host: str | None = None
    # The key of the svc_auth_user cookie (svc.kit.auth_cookie.edge_key): lua/svc_auth.lua checks
    # the signed-in end user with it; empty: no one is ever signed in at the worker.
    auth_key: str = ""


def quote(value: str) -> str:
    """A double-quoted nginx string. nginx has no escape for `$` (variables) in most directives,
    so values holding quotes, backslashes, `$` or control characters are refused."""
    if any(c in value for c in '"\\$') or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise EdgeConfigError(f"cannot use {value!r} in the edge config")
    return f'"{value}"'


def _single(value: str) -> str:
    """A single-quoted nginx string for fixed JSON bodies (no quote, backslash or `$` in them)."""
    if any(c in value for c in "'\\$"):
        raise EdgeConfigError(f"cannot use {value!r} in the edge config")
    return f"'{value}'"


def listen_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def api_address(api_url: str) -> tuple[str, str]:
    """(upstream server "host:port", Host header) of the API URL; only http://host[:port]."""
    parts = urlsplit(api_url)
    if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise EdgeConfigError(f"the edge's API address must be http://host:port, not {api_url!r}")
    port = parts.port or 80
    host = parts.hostname
    if host in ("0.0.0.0", ""):  # noqa: S104 - a listen-all address: reach it on loopback
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if not re.fullmatch(r"[A-Za-z0-9.:-]+", host):
        raise EdgeConfigError(f"the edge's API address is not valid: {api_url!r}")
    server = listen_address(host, port)
    return server, server


def request_id(prefix: str) -> str:
    """A request's id as nginx writes it: this start's prefix, then the worker process, its
    connection and the request's number on it. Unique for the life of the edge's files, and free:
    nginx's $request_id draws 16 random bytes a request, which cost the edge about 1.7 us each."""
    if not prefix.isalnum():
        raise EdgeConfigError(f"not a request id prefix: {prefix!r}")
    return f"{prefix}-$pid-$connection-$connection_requests"


def _format(value: str) -> str:
    """A single-quoted log_format whose `$` are nginx's variables (svc's own constant)."""
    if any(c in value for c in "'\\") or any(ord(c) < 32 for c in value):
        raise EdgeConfigError(f"cannot use {value!r} as a log format")
    return f"'{value}'"


def upstream_name(shard: int) -> str:
    """nginx's name of the worker runtime's process `shard` (an upstream{} block)."""
    return f"svc_worker_{shard}"


def _sockets(path: str) -> str:
    """The steady sockets' directory, checked (svc's own value: a bug if refused)."""
    if not path.startswith("/") or any(c in path for c in " ;{}\"'$") or any(ord(c) < 33 for c in path):
        raise EdgeConfigError(f"not a worker socket directory: {path!r}")
    return path


def _server(address: str) -> str:
    """An upstream server's host:port, checked (svc's own value: a bug if refused)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host or any(c in host for c in " ;{}\"'$"):
        raise EdgeConfigError(f"not a worker runtime address: {address!r}")
    return address


def _console(options: EdgeOptions) -> dict[str, object] | None:
    """The console's server blocks (its host)."""
    if options.console_host is None:
        return None
    return {"host": quote(options.console_host)}


@functools.cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
        # nginx.conf: no escaping (values are quoted by quote() above); the pages: HTML escaping.
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default_for_string=False,
                                            default=False),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(options: EdgeOptions, layout: EdgeLayout) -> str:
    """The whole nginx.conf (templates/nginx.conf.j2)."""
    api_server, api_host = api_address(options.api_url)
    mime_types = options.mime_types if options.mime_types is not None and options.mime_types.is_file() else None
    cache = None
    if options.check_cache_seconds > 0:
        cache = {"memory": CHECK_CACHE_MEMORY, "seconds": options.check_cache_seconds}
    t = layout.temp
    text = _env().get_template("nginx.conf.j2").render(
        config_id=_ID_PLACEHOLDER,
        worker_processes=options.worker_processes,
        pid=quote(str(layout.pid)),
        error_log=quote(str(layout.error_log)),
        lock_file=quote(str(layout.root / "nginx.lock")),
        user=" ".join(quote(part) for part in options.user.split()) if options.user else None,
        mime_types=quote(str(mime_types)) if mime_types else None,
        types=EXTRA_TYPES if mime_types else FALLBACK_TYPES,
        gzip_types=GZIP_TYPES,
        temp={name: quote(str(t / name)) for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")},
        traffic_log=quote(str(options.traffic_log)) if options.traffic_log is not None else None,
        traffic_format=_format(TRAFFIC_FORMAT.replace("$request_id", request_id(options.request_id_prefix))),
        request_id=request_id(options.request_id_prefix),
        modules=[quote(str(m)) for m in options.modules],
        lua_path=quote(f"{layout.lua}/?.lua;;"),
        routes_memory=ROUTES_MEMORY,
        # Lua strings inside init_by_lua: quote() refuses quotes and backslashes in them.
        routes_files=[quote(str(layout.routes)), quote(str(layout.routes_log))],
        void_unknown=quote(str(layout.void_unknown)),
        control_host=CONTROL_HOST,
        control_path=CONTROL_PATH,
        control_traffic_path=CONTROL_TRAFFIC_PATH,
        traffic_memory=TRAFFIC_MEMORY,
        control_token=_single(options.control_token),
        bodies={"not_found": _single(NOT_FOUND_BODY), "unknown_host": _single(UNKNOWN_HOST_BODY),
                "no_deployment": _single(NO_DEPLOYMENT_BODY), "method": _single(METHOD_BODY),
                "unauthorized": _single(UNAUTHORIZED_BODY), "internal": _single(INTERNAL_BODY),
                "pending_host": _single(PENDING_HOST_BODY)},
        pages=PAGES,
        pages_root=quote(str(layout.pages)),
        page_csp=PAGE_CSP,
        api_server=api_server,
        api_host=quote(api_host),
        listen=listen_address(options.listen_host, options.listen_port),
        check_cache=cache,
        check_path=CHECK_PATH,
        auth_renew_path=AUTH_RENEW_PATH,
        auth_key=quote(options.auth_key),
        pending_path=PENDING_PATH,
        status_host=STATUS_HOST,
        status_path=STATUS_PATH,
        workers=[_server(address) for address in options.workers],
        worker_sockets=_sockets(options.worker_sockets) if options.workers else None,
        assets_host=ASSETS_HOST,
        sites_root=quote(str(options.sites)) if options.sites is not None else None,
        runtime_token=_single(options.runtime_token) if options.workers else None,
        worker_timeout=options.worker_timeout_seconds,
        tls_listen=listen_address(options.listen_host, options.tls_port) if options.tls_port else None,
        # (Made of svc's own parts only: the scheme, svc's $svc_host and an integer port.)
        https_base="https://$svc_host" + (f":{int(options.tls_port)}" if options.tls_port not in (None, 443) else ""),
        tls={"table": quote(str(layout.certs / tls.TABLE)), "memory": CERTS_MEMORY,
             "chain": quote(str(layout.certs / tls.PLACEHOLDER_CHAIN)),
             "key": quote(str(layout.certs / tls.PLACEHOLDER_KEY))},
        control_certs_path=CONTROL_CERTS_PATH,
        hsts=f"max-age={int(options.hsts_seconds)}" if options.hsts_seconds > 0 and options.tls_port else None,
        console=_console(options),
    )
    return text.replace(_ID_PLACEHOLDER, hashlib.sha256(text.encode()).hexdigest()[:16])


def page_texts() -> dict[str, str]:
    """The edge's own HTML pages (templates/pages/), by file name."""
    env = _env()
    return {name: env.get_template(f"pages/{name}").render() for name in PAGES.values()}


def install_lua(layout: EdgeLayout) -> None:
    """Write the edge's Lua module into layout.lua (atomically)."""
    layout.lua.mkdir(parents=True, exist_ok=True)
    for source in LUA.glob("*.lua"):
        tmp = layout.lua / f".{source.name}.new"
        tmp.write_bytes(source.read_bytes())
        os.replace(tmp, layout.lua / source.name)


def install_pages(layout: EdgeLayout) -> None:
    """Write the edge's pages into layout.pages (each file replaced atomically)."""
    layout.pages.mkdir(parents=True, exist_ok=True)
    for name, text in page_texts().items():
        tmp = layout.pages / f".{name}.new"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, layout.pages / name)


def config_id(text: str) -> str | None:
    """The id render() wrote into a config text (its second line), which the status probe answers."""
    lines = text.split("\n", 2)
    if len(lines) > 1 and lines[1].startswith("# config "):
        return lines[1].removeprefix("# config ").strip() or None
    return None
