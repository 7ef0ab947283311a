"""A private PowerDNS for tests: the managed pdns_server of svc (adapters/nameserver), started under
a directory of the test's on free ports, with the adapter that drives it and helpers that query its
DNS port with dnspython.

    async with running_pdns(tmp_path) as pdns:
        await pdns.nameserver.ensure_zone("example.test.", nameservers=["ns1.svc.test."])
        answer = await pdns.query("example.test.", "SOA")

Tests that use it skip, with the reason, where pdns_server is not installed (`make test` installs it):
`pytestmark = PDNS_REQUIRED`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import dns.asyncquery
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.resolver

from svc.adapters.nameserver import RunningNameserver, start_nameserver
from svc.adapters.nameserver.powerdns import PowerDnsNameserver
from svc.adapters.nameserver.process import find_schema
from svc.adapters.nameserver.settings import NameserverSettings
from svc.settings import Config, Settings
from svc.supervisor import find_binary
from tests.support.components import needs
from tests.support.config import configured
from tests.support.ports import free_port

PDNS_INSTALLED = find_binary("pdns_server") is not None and find_schema() is not None
PDNS_REQUIRED = needs("PowerDNS (pdns-server, pdns-backend-sqlite3)", PDNS_INSTALLED)

NAMESERVERS = ["ns1.svc.test.", "ns2.svc.test."]


def free_dns_port(host: str = "127.0.0.1") -> int:
    """A port free for both TCP and UDP (DNS binds both)."""
    assert host == "127.0.0.1", host
    return free_port(udp_too=True)


def pdns_settings(data_dir: Path, **extra: object) -> Config:
    values: dict[str, object] = dict(data_dir=data_dir, dns_port=free_dns_port(), nameservers=",".join(NAMESERVERS),
                                     hostmaster="hostmaster.svc.test.", pdns_api_url=None, pdns_api_key=None)
    return configured(Settings(), **(values | extra))


@dataclass
class Pdns:
    running: RunningNameserver
    settings: Config

    @property
    def nameserver(self) -> PowerDnsNameserver:
        return self.running.nameserver

    @property
    def names(self) -> NameserverSettings:
        """The nameservers and hostmaster its zones are made with."""
        return self.settings.settings_of(NameserverSettings)

    @property
    def host(self) -> str:
        return self.settings.settings_of(NameserverSettings).dns_host

    @property
    def port(self) -> int:
        return self.settings.settings_of(NameserverSettings).dns_port

    async def stop(self) -> None:
        """Stop pdns (and its supervisor): the nameserver is down until start()."""
        await self.running.managed.stop()

    async def start(self) -> None:
        await self.running.managed.start()

    async def query(self, name: str, rdtype: str, *, want_dnssec: bool = False) -> dns.message.Message:
        """One UDP query to the DNS port (TCP when the answer is truncated)."""
        q = dns.message.make_query(name, rdtype, want_dnssec=want_dnssec)
        r = await dns.asyncquery.udp(q, self.host, port=self.port, timeout=2)
        if r.flags & dns.flags.TC:
            r = await dns.asyncquery.tcp(q, self.host, port=self.port, timeout=2)
        return r

    async def answer(self, name: str, rdtype: str) -> list[str]:
        """The records answered for name/type in zone-file text (sorted); [] for none."""
        r = await self.query(name, rdtype)
        want = dns.rdatatype.from_text(rdtype)
        rrset = next((s for s in r.answer if s.rdtype == want and s.name == dns.name.from_text(name)), None)
        return sorted(rd.to_text() for rd in rrset) if rrset is not None else []

    async def rcode(self, name: str, rdtype: str) -> str:
        return dns.rcode.to_text((await self.query(name, rdtype)).rcode())

    def resolver(self) -> dns.resolver.Resolver:
        """A stub resolver asking only this pdns (no cache)."""
        r = dns.resolver.Resolver(configure=False)
        r.nameservers = [self.host]
        r.port = self.port
        r.lifetime = 2
        r.cache = None
        return r


@asynccontextmanager
async def running_pdns(data_dir: Path, **settings: object) -> AsyncIterator[Pdns]:
    """svc's managed pdns under data_dir (its files in data_dir/pdns), DNS on a free port."""
    s = pdns_settings(data_dir, **settings)
    running = await start_nameserver(s)
    assert running is not None, "pdns_server is not installed"
    try:
        assert await running.nameserver.ping(), running.managed.process.last_log()
        yield Pdns(running=running, settings=s)
    finally:
        await running.stop()


async def clear_zones(pdns: Pdns) -> None:
    """Delete every zone the PowerDNS serves (a shared instance between tests)."""
    for name in await pdns.nameserver.zone_names():
        await pdns.nameserver.delete_zone(name)
