"""DNS resolution for ownership checks (custom hostnames). port.py is the contract (domains import
only it); dns.py asks a resolver with dnspython. Here: which resolver a running svc asks."""

from __future__ import annotations

from svc.adapters.nameserver.settings import NameserverSettings
from svc.adapters.resolver.dns import DnsResolver
from svc.adapters.resolver.settings import ResolverSettings
from svc.settings import Config

__all__ = ["DnsResolver", "build_resolver"]


def build_resolver(config: Config, *, managed_dns: bool) -> DnsResolver:
    """The resolver that stands for the public DNS: SVC_DNS_RESOLVER when set; else the system
    resolver of /etc/resolv.conf. Only with SVC_TRUST_OWN_ZONES (a local run) and when svc runs its
    own PowerDNS (`managed_dns`), that one's DNS address: its zones are answered there without any
    delegation. svc's own answers otherwise prove nothing (docs/dns.md)."""
    settings = config.settings_of(ResolverSettings)
    address = settings.dns_resolver_address
    if address is None and managed_dns and settings.trust_own_zones:
        dns = config.settings_of(NameserverSettings)
        host = dns.dns_host
        if host in ("0.0.0.0", ""):  # noqa: S104 - listening on all addresses: ask on loopback
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        address = (host, dns.dns_port)
    if address is None:
        return DnsResolver.system()
    return DnsResolver.at(*address)
