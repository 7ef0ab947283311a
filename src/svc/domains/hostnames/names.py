"""A custom hostname as written -> lowercase punycode, or a 400 saying what is wrong with it.

UTS-46 maps first (case, full-width letters and dots, as browsers do), then each label is checked
for the shapes people get wrong, each with its own sentence, then IDNA 2008 encodes it. Names of
the service itself are refused: a project must not capture svc's own addresses."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

import idna

from svc.adapters.nameserver.settings import NameserverSettings
from svc.domains.hostnames.errors import InvalidHostname
from svc.domains.hostnames.settings import HostnameSettings
from svc.settings import Config

MAX_NAME = 253
MAX_LABEL = 63
_LDH = re.compile(r"^[a-z0-9-]+$")
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f]")


def _bad(predicate: str) -> InvalidHostname:
    return InvalidHostname.of_field("name", predicate)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def normalize(text: str) -> str:
    """"Www.Bücher.example" -> "www.xn--bcher-kva.example" (no trailing dot)."""
    value = text.strip()
    if not value:
        raise _bad("must not be empty")
    if len(value) > MAX_NAME:
        raise _bad(f"must be at most {MAX_NAME} characters")
    if _SPACE_OR_CONTROL.search(value):
        raise _bad("must not contain spaces or control characters")
    if value.startswith("[") or ":" in value or _is_ip(value.rstrip(".")):
        raise _bad("must be a domain name, not an IP address")
    try:
        mapped = idna.uts46_remap(value, std3_rules=False, transitional=False)
    except (idna.IDNAError, UnicodeError):
        raise _bad("is not a valid internationalized name") from None
    if mapped.endswith("."):
        raise _bad("must not end with a dot (leave the trailing dot out)")
    labels = mapped.split(".")
    if any(not label for label in labels):
        raise _bad("must not have empty labels (two dots in a row, or a leading dot)")
    if "*" in mapped:
        raise _bad("must not be a wildcard: add each name, such as www.example.com")
    if "_" in mapped:
        raise _bad("must not contain _ (a host name has letters, digits and inner hyphens)")
    if len(labels) < 2:
        raise _bad("must have at least two labels, such as www.example.com")
    for label in labels:
        if label.isascii():
            if len(label) > MAX_LABEL:
                raise _bad(f"must have labels of at most {MAX_LABEL} characters")
            if label.startswith("-") or label.endswith("-"):
                raise _bad("must not have labels starting or ending with a hyphen")
            if not _LDH.match(label):
                raise _bad("may hold only letters, digits and inner hyphens in each label")
    if labels[-1].isdigit() or _is_ip(mapped):
        raise _bad("must be a domain name, not an IP address")
    try:
        encoded = idna.encode(mapped, uts46=False).decode("ascii")
    except idna.IDNAError as exc:
        if "too long" in str(exc).lower():
            raise _bad(f"must have labels of at most {MAX_LABEL} characters (as punycode)") from None
        raise _bad("has a label that is not a valid internationalized name") from None
    except UnicodeError:
        raise _bad("has a label that is not a valid internationalized name") from None
    if len(encoded) > MAX_NAME:
        raise _bad(f"must be at most {MAX_NAME} characters (as punycode)")
    return encoded


def _within(name: str, domain: str) -> bool:
    return name == domain or name.endswith("." + domain)


def _parent(name: str) -> str | None:
    """The domain of a host name: its parent, when that has two labels or more."""
    _, _, rest = name.partition(".")
    return rest if "." in rest else None


def service_domains(config: Config) -> list[str]:
    """The names svc answers for itself (no trailing dot): the app domain (every default hostname
    is under it), the API's host, the nameservers' domains and the fallback origin's domain."""
    found: list[str] = []

    def add(name: str | None) -> None:
        if not name:
            return
        name = name.strip().lower().rstrip(".")
        if name and not _is_ip(name) and name not in found:
            found.append(name)

    add(config.settings.app_domain)
    add(urlsplit(config.settings.public_url).hostname)
    for ns in config.settings_of(NameserverSettings).nameserver_names:
        add(_parent(ns.rstrip(".")) or ns)
    origin = config.settings_of(HostnameSettings).fallback_origin_name(config.settings.app_domain).rstrip(".")
    add(origin)
    add(_parent(origin))
    return found


def check_not_service(config: Config, host: str) -> None:
    for domain in service_domains(config):
        if _within(host, domain):
            raise _bad(f"must not be under the service's own domain {domain}")


def lookup_form(text: str) -> str | None:
    """A path's {host} in the stored form (lenient: any case, a trailing dot, unicode), or None
    when it cannot be a stored host (the route answers 404)."""
    value = text.strip().rstrip(".")
    try:
        return normalize(value)
    except InvalidHostname:
        return None
