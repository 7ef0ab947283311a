"""The resolver's settings: whom ownership and delegation checks ask (docs/hostnames.md)."""

from __future__ import annotations

import ipaddress

from pydantic import Field, field_validator

from svc.settings import ComponentSettings


class ResolverSettings(ComponentSettings):
    # "host:port" (an IP address; port 53 when left out) of a resolver that stands for the public
    # DNS, which ownership and delegation checks ask; unset: the system resolver (/etc/resolv.conf),
    # or, with SVC_TRUST_OWN_ZONES, the managed PowerDNS when svc runs one.
    dns_resolver: str | None = None
    # How often pending hostnames are checked, in seconds.
    hostname_verify_seconds: float = Field(default=60.0, gt=0)
    # Trust svc's own zones as proof of ownership: a zone counts as delegated, and ownership
    # lookups ask the managed PowerDNS. For a local run on a machine with no public DNS (`make run`
    # sets it); unsafe on a shared server, where any org could claim any name (docs/dns.md).
    trust_own_zones: bool = False

    @field_validator("dns_resolver")
    @classmethod
    def _resolver_address(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        _resolver_host_port(v)
        return v.strip()

    @property
    def dns_resolver_address(self) -> tuple[str, int] | None:
        """(ip, port) of SVC_DNS_RESOLVER, or None when unset."""
        return _resolver_host_port(self.dns_resolver) if self.dns_resolver else None


def _resolver_host_port(text: str) -> tuple[str, int]:
    """ "127.0.0.1:5353", "[::1]:53", "192.0.2.1" (port 53) -> (ip, port); ValueError otherwise."""
    value = text.strip()
    host, port = value, "53"
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest.removeprefix(":") or "53"
    elif value.count(":") == 1:
        host, port = value.split(":")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(
            "the DNS resolver must be an IP address with an optional port, such as 127.0.0.1:5353 or [::1]:53"
        ) from None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("the DNS resolver's port must be a number from 1 to 65535")
    return host, int(port)
