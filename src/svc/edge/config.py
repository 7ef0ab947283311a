"""Renders the edge's nginx.conf (one file: settings, the host maps and the server blocks) from the
routing table. Pure: the same routes and options always give the same text, so "changed" is a
string comparison and the config id (a hash of the text) tells which config a worker serves.

Layout of a request (docs/edge.md):
- `map $host $svc_root` (with `hostnames`) gives the web root of the host's live deployment,
  `<edge>/void/none` (an empty directory) when the project has no deployment yet, or
  `<edge>/void/unknown` for a host nobody routes.
- Public hosts and unknown hosts: the default server. Protected hosts (access mode org/password):
  one server block listing them, with `auth_request` against the API's /v1/edge/check and the
  204 answers cached per host + access generation + cookie + bypass header.
- 404s: the deployment's own /404.html when it has one, else a JSON Error envelope whose code and
  message come from `map $svc_root $svc_404`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

# Host names the edge routes: lowercase DNS names (the projects area validates them; this keeps
# anything else out of the config text).
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
# The status probe's Host: not a DNS name (underscore), so no project can own it.
STATUS_HOST = "_svc-edge-status"
STATUS_PATH = "/config"
CHECK_PATH = "/__svc/_check"
_ID_PLACEHOLDER = "@@SVC_CONFIG_ID@@"
MIME_TYPES = Path("/etc/nginx/mime.types")

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
    def access_log(self) -> Path:
        return self.root / "access.log"

    @property
    def temp(self) -> Path:
        return self.root / "tmp"

    @property
    def check_cache(self) -> Path:
        return self.root / "check-cache"

    @property
    def void_unknown(self) -> Path:
        return self.root / "void" / "unknown"

    @property
    def void_none(self) -> Path:
        return self.root / "void" / "none"

    def prepare(self) -> None:
        for path in (self.root, self.temp, self.check_cache, self.void_unknown, self.void_none):
            path.mkdir(parents=True, exist_ok=True)
        # The check cache's keys (written into its files) hold cookies and bypass headers.
        self.root.chmod(0o700)
        self.check_cache.chmod(0o700)


@dataclass(frozen=True)
class SiteRoute:
    """One routed host as the renderer needs it."""

    host: str
    # The directory served as the web root; None while the project has no deployment.
    web_root: Path | None
    protected: bool
    access_generation: int


@dataclass(frozen=True)
class EdgeOptions:
    listen_host: str
    listen_port: int
    # The svc API the edge asks (auth_request) and proxies /__svc/ to: http://host:port.
    api_url: str
    check_cache_seconds: int
    worker_processes: int = 1
    access_log: bool = False
    # "user group" for the workers when nginx starts as root (else None: workers keep the user).
    user: str | None = None
    mime_types: Path | None = MIME_TYPES


def valid_host(host: str) -> bool:
    return len(host) <= 253 and bool(_HOST.match(host))


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


def _bucket_size(names: list[str]) -> int:
    longest = max((len(n) for n in names), default=0)
    size = 64
    while size < longest + 32:
        size *= 2
    return size


def _types_block(options: EdgeOptions) -> list[str]:
    if options.mime_types is not None and options.mime_types.is_file():
        lines = [f"    include {quote(str(options.mime_types))};", "    types {"]
        lines += [f"        {mime} {exts};" for mime, exts in EXTRA_TYPES.items()]
    else:
        lines = ["    types {"]
        lines += [f"        {mime} {exts};" for mime, exts in FALLBACK_TYPES.items()]
    return [*lines, "    }"]


def _proxy_to_api(api_host: str) -> list[str]:
    return [
        "            proxy_http_version 1.1;",
        '            proxy_set_header Connection "";',
        f"            proxy_set_header Host {quote(api_host)};",
        "            proxy_set_header X-Svc-Host $host;",
        "            proxy_set_header X-Forwarded-For $remote_addr;",
        "            proxy_set_header X-Forwarded-Proto $scheme;",
        "            proxy_redirect off;",
    ]


def _site_locations(api_host: str, *, protected: bool) -> list[str]:
    """The locations every project server has: static files, /__svc/ to the API, the 404 chain."""
    auth_off = ["            auth_request off;"] if protected else []
    return [
        "        location / {",
        "        }",
        "        location /__svc/ {",
        *auth_off,
        "            proxy_pass http://svc_api/v1/edge/;",
        *_proxy_to_api(api_host),
        "        }",
        # The deployment's own /404.html when it has one (status stays 404), else JSON.
        "        location @svc_404 {",
        "            try_files /404.html @svc_404_json;",
        "        }",
        "        location @svc_404_json {",
        *auth_off,
        "            types { }",
        "            default_type application/json;",
        "            return 404 $svc_404;",
        "        }",
        "        location @svc_405 {",
        *auth_off,
        "            types { }",
        "            default_type application/json;",
        f"            return 405 {_single(METHOD_BODY)};",
        "        }",
        "        location @svc_5xx {",
        *auth_off,
        "            types { }",
        "            default_type application/json;",
        f"            return 500 {_single(INTERNAL_BODY)};",
        "        }",
    ]


def _error_pages() -> list[str]:
    return [
        "        error_page 404 @svc_404;",
        # A directory without index.html.
        "        error_page 403 =404 @svc_404;",
        "        error_page 405 =405 @svc_405;",
        "        error_page 500 502 503 504 =500 @svc_5xx;",
    ]


def render(options: EdgeOptions, layout: EdgeLayout, routes: list[SiteRoute]) -> str:
    """The whole nginx.conf. Routes with invalid host names are left out (the caller logs them)."""
    routes = sorted((r for r in routes if valid_host(r.host)), key=lambda r: r.host)
    api_server, api_host = api_address(options.api_url)
    listen = listen_address(options.listen_host, options.listen_port)
    unknown, none = quote(str(layout.void_unknown)), quote(str(layout.void_none))
    hosts = [r.host for r in routes]
    protected = [r for r in routes if r.protected]
    bucket = _bucket_size([*hosts, str(layout.void_unknown), str(layout.void_none)])
    hash_max = max(1024, 4 * len(hosts))
    t = layout.temp

    out = [
        "# Generated by svc from the state store; rewritten on every change. Do not edit.",
        f"# config {_ID_PLACEHOLDER}",
        f"worker_processes {options.worker_processes};",
        f"pid {quote(str(layout.pid))};",
        f"error_log {quote(str(layout.error_log))} warn;",
        f"lock_file {quote(str(layout.root / 'nginx.lock'))};",
        "pcre_jit on;",
    ]
    if options.user:
        out.append(f"user {options.user};")
    out += [
        "events {",
        "    worker_connections 4096;",
        "}",
        "http {",
        *_types_block(options),
        "    default_type application/octet-stream;",
        "    charset utf-8;",
        "    charset_types text/plain text/css text/xml text/javascript text/markdown "
        "application/javascript;",
        "    server_tokens off;",
        "    sendfile on;",
        "    tcp_nopush on;",
        "    tcp_nodelay on;",
        "    etag on;",
        # Revalidate on every use (the ETag makes that a cheap 304), so a deploy or rollback
        # shows at once in browsers, as on Vercel and Cloudflare Pages.
        '    add_header Cache-Control "public, max-age=0, must-revalidate";',
        "    absolute_redirect off;",
        "    keepalive_timeout 65s;",
        "    keepalive_requests 10000;",
        "    reset_timedout_connection on;",
        "    client_header_timeout 15s;",
        "    client_body_timeout 15s;",
        "    send_timeout 60s;",
        "    client_header_buffer_size 1k;",
        "    large_client_header_buffers 4 8k;",
        "    client_max_body_size 64k;",
        "    client_body_buffer_size 16k;",
        "    open_file_cache max=10000 inactive=30s;",
        "    open_file_cache_valid 30s;",
        "    gzip on;",
        "    gzip_vary on;",
        "    gzip_comp_level 5;",
        "    gzip_min_length 256;",
        f"    gzip_types {GZIP_TYPES};",
        f"    client_body_temp_path {quote(str(t / 'body'))};",
        f"    proxy_temp_path {quote(str(t / 'proxy'))};",
        f"    fastcgi_temp_path {quote(str(t / 'fastcgi'))};",
        f"    uwsgi_temp_path {quote(str(t / 'uwsgi'))};",
        f"    scgi_temp_path {quote(str(t / 'scgi'))};",
    ]
    if options.access_log:
        # The path only: query strings may carry one-time codes.
        out += ["    log_format svc '$remote_addr [$time_iso8601] \"$request_method $host$uri\" $status "
                "$body_bytes_sent $request_time';",
                f"    access_log {quote(str(layout.access_log))} svc;"]
    else:
        out.append("    access_log off;")
    out += [
        f"    map_hash_bucket_size {bucket};",
        f"    map_hash_max_size {hash_max};",
        f"    server_names_hash_bucket_size {bucket};",
        f"    server_names_hash_max_size {hash_max};",
        "    map $host $svc_root {",
        "        hostnames;",
        f"        default {unknown};",
    ]
    for r in routes:
        root = quote(str(r.web_root)) if r.web_root is not None else none
        out.append(f"        {r.host} {root};")
    out += [
        "    }",
        "    map $svc_root $svc_404 {",
        f"        default {_single(NOT_FOUND_BODY)};",
        f"        {unknown} {_single(UNKNOWN_HOST_BODY)};",
        f"        {none} {_single(NO_DEPLOYMENT_BODY)};",
        "    }",
        "    upstream svc_api {",
        f"        server {api_server};",
        "        keepalive 16;",
        "    }",
    ]
    if protected and options.check_cache_seconds > 0:
        out.append(f"    proxy_cache_path {quote(str(layout.check_cache))} levels=1:2 keys_zone=svc_check:4m "
                   "max_size=64m inactive=2m use_temp_path=off;")
    if protected:
        out.append("    map $host $svc_access_gen {")
        out.append("        hostnames;")
        out.append("        default 0;")
        out += [f"        {r.host} {r.access_generation};" for r in protected]
        out.append("    }")

    # Public and unknown hosts.
    out += [
        "    server {",
        f"        listen {listen} default_server;",
        '        server_name "";',
        "        root $svc_root;",
        "        index index.html;",
        f"        if ($svc_root = {unknown}) {{",
        "            return 404;",
        "        }",
        *_error_pages(),
        *_site_locations(api_host, protected=False),
        "    }",
    ]
    if protected:
        out += [
            "    server {",
            f"        listen {listen};",
            "        server_name " + " ".join(r.host for r in protected) + ";",
            "        root $svc_root;",
            "        index index.html;",
            f"        auth_request {CHECK_PATH};",
            "        auth_request_set $svc_login $upstream_http_x_svc_login;",
            "        error_page 401 = @svc_login;",
            *_error_pages(),
            *_site_locations(api_host, protected=True),
            f"        location = {CHECK_PATH} {{",
            "            internal;",
            "            proxy_pass http://svc_api/v1/edge/check;",
            "            proxy_method GET;",
            "            proxy_pass_request_body off;",
            "            proxy_pass_request_headers off;",
            *_proxy_to_api(api_host),
            "            proxy_set_header X-Svc-Uri $request_uri;",
            "            proxy_set_header Cookie $http_cookie;",
            "            proxy_set_header Svc-Access-Bypass $http_svc_access_bypass;",
        ]
        if options.check_cache_seconds > 0:
            out += [
                "            proxy_cache svc_check;",
                '            proxy_cache_key "$host|$svc_access_gen|$http_cookie|$http_svc_access_bypass";',
                f"            proxy_cache_valid 204 {options.check_cache_seconds}s;",
                "            proxy_ignore_headers X-Accel-Expires Expires Cache-Control Set-Cookie Vary;",
            ]
        out += [
            "        }",
            "        location @svc_login {",
            "            auth_request off;",
            "            types { }",
            "            default_type application/json;",
            '            if ($svc_login = "") {',
            f"                return 401 {_single(UNAUTHORIZED_BODY)};",
            "            }",
            "            return 302 $svc_login;",
            "        }",
            "    }",
        ]
    # The status probe: which config the workers that accept new connections run.
    out += [
        "    server {",
        f"        listen {listen};",
        f"        server_name {STATUS_HOST};",
        f"        location = {STATUS_PATH} {{",
        "            default_type text/plain;",
        f'            return 200 "{_ID_PLACEHOLDER}";',
        "        }",
        "        location / {",
        "            return 404;",
        "        }",
        "    }",
        "}",
        "",
    ]
    text = "\n".join(out)
    return text.replace(_ID_PLACEHOLDER, hashlib.sha256(text.encode()).hexdigest()[:16])


def config_id(text: str) -> str | None:
    """The id render() wrote into a config text (its second line), which the status probe answers."""
    lines = text.split("\n", 2)
    if len(lines) > 1 and lines[1].startswith("# config "):
        return lines[1].removeprefix("# config ").strip() or None
    return None
