"""The resolver custom hostnames' ownership is checked against (the public DNS, as SVC_DNS_RESOLVER
stands for it) as a component."""

from __future__ import annotations

from svc.adapters.nameserver import nameserver_plan
from svc.adapters.nameserver.settings import NameserverSettings
from svc.adapters.resolver import DnsResolver, build_resolver
from svc.adapters.resolver.settings import ResolverSettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line


def build(config: Config) -> DnsResolver:
    return build_resolver(config, managed_dns=nameserver_plan(config).mode == "managed")


def _asks_itself(config: Config) -> bool:
    """Whether SVC_DNS_RESOLVER names the DNS address of svc's own managed PowerDNS."""
    settings = config.settings_of(ResolverSettings)
    asked = settings.dns_resolver_address
    if asked is None or nameserver_plan(config).mode != "managed":
        return False
    dns = config.settings_of(NameserverSettings)
    own = "127.0.0.1" if dns.dns_host in ("0.0.0.0", "") else dns.dns_host  # noqa: S104
    return asked == (own, dns.dns_port)


def _preflight(config: Config) -> str | None:
    settings = config.settings_of(ResolverSettings)
    if not settings.trust_own_zones and _asks_itself(config):
        return (f"SVC_DNS_RESOLVER ({settings.dns_resolver}) is svc's own nameserver: ownership would be proven by "
                "svc's own answers. Point it at a recursive resolver that stands for the public DNS, or set "
                "SVC_TRUST_OWN_ZONES=true for a local run")
    return None


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings = config.settings_of(ResolverSettings)
    lines = [Line("hostnames", f"ownership checked every {settings.hostname_verify_seconds:g}s, asking "
                               f"{build(config).description} (SVC_DNS_RESOLVER) for the public DNS")]
    if settings.trust_own_zones:
        lines.append(Line("ownership", "svc's own zones are trusted as proof (SVC_TRUST_OWN_ZONES=true): UNSAFE on "
                                       "a shared server, where any org could claim any name", alarm=True))
    return lines


COMPONENT = Component(name="resolver", settings=ResolverSettings, slot="resolver", build=build, fill=True,
                      preflight=_preflight, banner=_banner)
