"""The authoritative nameserver as a component: an external PowerDNS (built from the settings), or
the managed pdns_server svc starts and supervises when it is installed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from svc.adapters.nameserver import (
    NameserverPortInUse,
    build_nameserver,
    dns_address,
    dns_port_taken,
    nameserver_plan,
    start_nameserver,
)
from svc.adapters.nameserver.settings import NameserverSettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line, holding


def _off(config: Config) -> str | None:
    plan = nameserver_plan(config)
    return plan.summary.removeprefix("OFF - ").rstrip(".") if plan.mode == "off" else None


def _port_taken_words(address: str) -> str:
    return (f"the DNS port {address} is in use; stop what uses it or choose another with SVC_DNS_PORT "
            f"(or set SVC_DNS_ENABLED=false)")


def _preflight(config: Config) -> str | None:
    settings = config.settings_of(NameserverSettings)
    # pdns would exit at once, again and again (the start checks again).
    if nameserver_plan(config).mode == "managed" and dns_port_taken(config):
        return _port_taken_words(dns_address(settings.dns_host, settings.dns_port))
    return None


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    if "nameserver" not in launch.processes or ctx.adapters.nameserver is not None:
        yield
        return
    # Raises NameserverPortInUse (one line in `svc serve`) when the DNS port is taken.
    dns = await start_nameserver(ctx.config)
    if dns is None:
        yield
        return
    async with holding(ctx, "nameserver", dns.nameserver, dns.stop):
        yield


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings = config.settings_of(NameserverSettings)
    plan = nameserver_plan(config)
    return [Line("dns", plan.summary, alarm=plan.mode == "off" and settings.dns_enabled)]


def _explain(exc: Exception) -> str:
    assert isinstance(exc, NameserverPortInUse)
    return _port_taken_words(exc.address)


COMPONENT = Component(name="nameserver", settings=NameserverSettings, slot="nameserver", build=build_nameserver,
                      off=_off, start=_start, processes=("PowerDNS",), preflight=_preflight, banner=_banner,
                      explains={NameserverPortInUse: _explain})
