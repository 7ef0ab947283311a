"""Host names as svc routes them: lowercase DNS names, at most 253 characters, labels of at most 63.
The one pattern the API, the edge's checks and the nginx config all hold host names to."""

from __future__ import annotations

import re

MAX_HOST = 253
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
HOST_PATTERN = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")


def valid_host(host: str) -> bool:
    return len(host) <= MAX_HOST and bool(HOST_PATTERN.match(host))


def normalize_host(value: str | None) -> str | None:
    """A host name as nginx's $host gives it (lowercase, no port, no trailing dot), or None."""
    if not value:
        return None
    host = value.strip().lower()
    if host.count(":") == 1:  # host:port
        host = host.split(":", 1)[0]
    host = host.removesuffix(".")
    return host if host and valid_host(host) else None


def unicode_spelling(name: str) -> str | None:
    """The internationalized spelling of a name with punycode labels (xn--bcher-kva.example ->
    bücher.example), for showing beside it; None for a plain name or a label that is not valid
    punycode. (idna is imported here, not at start: the CLI's start-up stays short.)"""
    bare = name.rstrip(".")
    if "xn--" not in bare:
        return None
    import idna

    try:
        return str(idna.decode(bare))
    except (idna.IDNAError, UnicodeError):
        return None


def idna_label(label: str) -> str:
    """One label of a DNS name as stored: lowercase ASCII, the punycode of an internationalized
    label (UTS-46 maps case and width, then IDNA 2008 checks it), or a punycode label (xn--) checked
    to be one. ValueError for a label that is not a valid internationalized name: zones, record
    names and custom hostnames hold their labels to this one rule."""
    import idna

    try:
        if not label.isascii():
            return str(idna.encode(label, uts46=True).decode("ascii"))
        lowered = label.lower()
        if lowered.startswith("xn--"):
            idna.decode(lowered)  # an A-label must decode to a valid U-label
        return lowered
    except (idna.IDNAError, UnicodeError):
        raise ValueError("has a label that is not a valid internationalized name") from None


def local_address(listen_host: str) -> str:
    """Where a process on this machine reaches a server listening on `listen_host`: loopback for
    the any-addresses (0.0.0.0, ::), else that address."""
    if listen_host in ("0.0.0.0", ""):  # noqa: S104 - listening on all addresses: reached on loopback
        return "127.0.0.1"
    if listen_host == "::":
        return "::1"
    return listen_host
