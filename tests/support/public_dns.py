"""A second PowerDNS that stands for the public DNS in tests (the DNS a recursive resolver would
reach): it serves a parent zone, "example.", in which a test delegates a child to svc's
nameservers, or to someone else's, or hosts the child itself as "the real owner's DNS host".

    public.delegate("bank.example.", ["ns1.svc.test.", "ns2.svc.test."])   # the registrar points at svc
    await public.host("bank.example.", {("_svc-verify.www.bank.example.", "TXT"): ['"value"']})

svc asks it through its resolver (SVC_DNS_RESOLVER) and never through its own PowerDNS."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from svc.adapters.nameserver.port import RRsetData
from tests.support.pdns import Pdns, clear_zones, running_pdns

PARENT = "example."
# The nameservers of zones the public DNS hosts itself (another DNS host than svc).
ELSEWHERE = ["ns1.elsewhere.test.", "ns2.elsewhere.test."]


@dataclass
class PublicDns:
    pdns: Pdns

    @property
    def address(self) -> str:
        return f"{self.pdns.host}:{self.pdns.port}"

    async def reset(self) -> None:
        """Only the parent zone, delegating nothing."""
        await clear_zones(self.pdns)
        await self.pdns.nameserver.ensure_zone(PARENT, nameservers=ELSEWHERE)

    async def delegate(self, zone: str, nameservers: list[str]) -> None:
        """The parent's NS for `zone` (the registrar's nameserver setting); the zone's own copy here,
        if it was hosted, goes: the answers now come from where it is delegated."""
        if zone in await self.pdns.nameserver.zone_names():
            await self.pdns.nameserver.delete_zone(zone)
        await self.pdns.nameserver.apply(PARENT, replace=[RRsetData(name=zone, type="NS", ttl=60,
                                                                    records=tuple(nameservers))], delete=[])

    async def host(self, zone: str, records: dict[tuple[str, str], list[str]]) -> None:
        """`zone` hosted by the real owner's DNS host (here), with these record sets; the parent
        delegates it there."""
        await self.delegate(zone, ELSEWHERE)
        await self.pdns.nameserver.ensure_zone(zone, nameservers=ELSEWHERE)
        sets = [RRsetData(name=name, type=rtype, ttl=60, records=tuple(values))
                for (name, rtype), values in records.items()]
        await self.pdns.nameserver.apply(zone, replace=sets, delete=[])


@contextlib.asynccontextmanager
async def running_public_dns(path: Path) -> AsyncIterator[PublicDns]:
    """A PowerDNS of its own under `path`, empty, standing for the public DNS."""
    async with running_pdns(path) as pdns:
        world = PublicDns(pdns)
        await world.reset()
        yield world
