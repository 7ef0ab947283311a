"""The authoritative nameserver svc's DNS zones are served from (PowerDNS, docs/dns.md).

port.py is the contract (domains import only it); powerdns.py drives a PowerDNS through its HTTP
API; process.py runs the private pdns_server that `svc serve` manages when no external PowerDNS is
configured. Here: which of them a running svc gets, and the one line that says so."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from svc.adapters.nameserver.powerdns import SOA_TIMERS, PowerDnsNameserver
from svc.adapters.nameserver.process import (
    ManagedPowerDns,
    NameserverPortInUse,
    PdnsLayout,
    find_schema,
    pdns_spec,
)
from svc.adapters.nameserver.settings import NameserverSettings
from svc.settings import Config
from svc.supervisor import Port, ProcessError, find_binary, taken_port
from svc.supervisor import host_port as dns_address

log = logging.getLogger("svc.dns")

INSTALL_HINT = ("install pdns-server and pdns-backend-sqlite3 (Debian; `make setup` does it) or point svc at a "
                "PowerDNS with SVC_PDNS_API_URL and SVC_PDNS_API_KEY")

__all__ = ["INSTALL_HINT", "ManagedPowerDns", "NameserverPlan", "NameserverPortInUse", "PowerDnsNameserver",
           "RunningNameserver", "build_nameserver", "dns_address", "dns_port_taken", "nameserver_plan",
           "start_nameserver"]


@dataclass(frozen=True)
class NameserverPlan:
    """What this svc will use for DNS, decided from the settings and what is installed."""

    mode: str  # "external", "managed" or "off"
    # The banner's words: where DNS is answered, or why it is off.
    summary: str
    binary: str | None = None


def nameserver_plan(config: Config) -> NameserverPlan:
    settings = config.settings_of(NameserverSettings)
    if not settings.dns_enabled:
        return NameserverPlan("off", "off (SVC_DNS_ENABLED=false): the DNS routes answer 503 dns_not_configured")
    if settings.pdns_api_url:
        if settings.pdns_api_key is None:
            return NameserverPlan("off", "OFF - SVC_PDNS_API_URL is set but SVC_PDNS_API_KEY is not: the DNS "
                                         "routes answer 503 dns_not_configured")
        return NameserverPlan("external", f"PowerDNS at {settings.pdns_api_url} (external; SVC_PDNS_API_URL)")
    binary = find_binary(settings.pdns_binary)
    if binary is None:
        return NameserverPlan("off", f"OFF - PowerDNS ({settings.pdns_binary}) was not found and no "
                                     f"SVC_PDNS_API_URL is set, so the DNS routes answer 503 dns_not_configured. "
                                     f"To serve zones, {INSTALL_HINT}.")
    if find_schema() is None:
        return NameserverPlan("off", f"OFF - {binary} is installed but not its sqlite backend, so the DNS routes "
                                     f"answer 503 dns_not_configured. To serve zones, {INSTALL_HINT}.")
    where = dns_address(settings.dns_host, settings.dns_port)
    return NameserverPlan("managed", f"PowerDNS ({binary}, managed) on {where}; data and log in "
                                     f"{config.settings.data_dir / 'pdns'}", binary=binary)


def build_nameserver(config: Config) -> PowerDnsNameserver | None:
    """The adapter of an external PowerDNS (SVC_PDNS_API_URL + SVC_PDNS_API_KEY), or None: the
    managed one exists only once `start_nameserver` has started it."""
    settings = config.settings_of(NameserverSettings)
    if nameserver_plan(config).mode != "external":
        return None
    assert settings.pdns_api_url is not None and settings.pdns_api_key is not None
    return PowerDnsNameserver(settings.pdns_api_url, settings.pdns_api_key.get_secret_value(),
                              hostmaster=settings.hostmaster,
                              description=f"PowerDNS at {settings.pdns_api_url} (external)")


def dns_port_taken(config: Config) -> bool:
    """Whether another program holds the managed pdns's DNS address, checked before anything
    starts. A pdns that a previous svc on this data dir left running does not count: it is replaced."""
    settings = config.settings_of(NameserverSettings)
    return taken_port(pdns_spec(settings.pdns_binary, _layout(config), _dns_port(config))) is not None


@dataclass
class RunningNameserver:
    """A managed pdns and the adapter that drives it (the adapter follows its API port across restarts)."""

    nameserver: PowerDnsNameserver
    managed: ManagedPowerDns

    async def stop(self) -> None:
        await self.managed.stop()
        await self.nameserver.aclose()


async def start_nameserver(config: Config) -> RunningNameserver | None:
    """Start and supervise the managed pdns when the settings call for it; None (the reason is in
    the banner, nameserver_plan) otherwise. Raises NameserverPortInUse when another program holds
    the DNS address: svc does not run beside a nameserver it cannot start (as with the edge)."""
    settings = config.settings_of(NameserverSettings)
    plan = nameserver_plan(config)
    if plan.mode != "managed" or plan.binary is None:
        return None
    layout = _layout(config)
    managed = ManagedPowerDns(plan.binary, layout, _dns_port(config), soa_content=soa_content(config))
    try:
        # The key (and the db) exist from here on, also when the first start fails and is retried.
        layout.prepare()
        await managed.start()
    except NameserverPortInUse:
        raise
    except (ProcessError, OSError) as exc:
        log.error("the nameserver is off: %s", exc)
        return None
    nameserver = PowerDnsNameserver(
        lambda: managed.api_url, layout.read_api_key(), hostmaster=settings.hostmaster,
        description=f"PowerDNS (managed, DNS on {managed.address})")
    return RunningNameserver(nameserver=nameserver, managed=managed)


def soa_content(config: Config) -> str:
    """The SOA of zones made without one: the first nameserver, the hostmaster, pdns's own serial."""
    settings = config.settings_of(NameserverSettings)
    return f"{settings.nameserver_names[0]} {settings.hostmaster} 0 {SOA_TIMERS}"


def _layout(config: Config) -> PdnsLayout:
    return PdnsLayout(config.settings.data_dir.resolve() / "pdns")


def _dns_port(config: Config) -> Port:
    settings = config.settings_of(NameserverSettings)
    return Port(settings.dns_host, settings.dns_port, ("udp", "tcp"))
