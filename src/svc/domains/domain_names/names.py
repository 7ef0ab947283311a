"""A domain name as written -> the registrable name svc keeps (lowercase punycode, no trailing dot),
or a 400 naming the field. Case and one trailing dot are forgiven (as a browser's address bar
does); unicode is encoded with IDNA 2008. svc sells and imports registrable names only: one label
under a top-level domain (example.com), not a subdomain."""

from __future__ import annotations

import re

from svc.domains.dns import service as dns
from svc.domains.domain_names.errors import InvalidDomain
from svc.errors import BadRequest

TLD = re.compile(r"^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$")


def domain_name(text: str, *, field: str = "name") -> str:
    try:
        zone = dns.canonical_zone_name(text, field=field)
    except BadRequest as exc:  # the DNS area's words, under this area's error
        raise InvalidDomain(exc.message, details=exc.details) from None
    name = zone.rstrip(".")
    labels = name.split(".")
    if not TLD.match(labels[-1]):
        raise InvalidDomain.of_field(field, f"must end in a top-level domain of letters (.com, .dev), not "
                                            f".{labels[-1]}")
    if len(labels) != 2:
        raise InvalidDomain.of_field(field, f"must be a registrable name such as {'.'.join(labels[-2:])}, not a "
                                            "subdomain")
    return name
