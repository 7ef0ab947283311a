"""Whether a URL lies under an allowed prefix, read as a browser reads it: where svc may send a
browser back to (an identity provider's redirect under SVC_IDP_REDIRECTS, a billing provider's
return under SVC_PUBLIC_URL)."""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\]")  # control characters, spaces, backslashes
_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 8252 7.3: a native app (the svc CLI) listens on a loopback IP at a port the system picks, so an
# allowlist entry for a loopback IP literal written without a port allows any port.
_LOOPBACK_IPS = frozenset({"127.0.0.1", "::1"})


class _Target(NamedTuple):
    scheme: str
    host: str
    port: int
    path: str
    explicit_port: bool


def _parse(url: str) -> _Target | None:
    """A URL a browser reads the same way we do, or None."""
    if not url or not url.isascii() or _FORBIDDEN.search(url) or "#" in url:
        return None
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.netloc or "@" in parts.netloc or not parts.hostname:
        return None
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        return None
    path = parts.path or "/"
    decoded = unquote(path)
    if "\\" in decoded or any(seg in (".", "..") for seg in decoded.split("/")):
        return None  # a browser would normalise these out of the allowed prefix
    return _Target(scheme, parts.hostname.lower(), port, path, parts.port is not None)


def under(url: str, prefix: str) -> bool:
    """`url` lies under `prefix`: same scheme, host and port (any port for a loopback IP prefix
    written without one), and a path under the prefix's path (by whole segments unless the prefix
    ends with '/')."""
    target, allowed = _parse(url), _parse(prefix)
    if target is None or allowed is None or (target.scheme, target.host) != (allowed.scheme, allowed.host):
        return False
    any_port = allowed.host in _LOOPBACK_IPS and not allowed.explicit_port
    if target.port != allowed.port and not any_port:
        return False
    path = allowed.path
    if path.endswith("/"):
        return target.path.startswith(path)
    return target.path == path or target.path.startswith(path + "/")
