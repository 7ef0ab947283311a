"""The resolver adapter against a real PowerDNS that stands for the public DNS: what the DNS
delegates a zone to (the parent's referral, or the zone's own answer), and records of a hosted zone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from svc.adapters.nameserver.port import RRsetData
from svc.adapters.resolver.dns import DnsResolver
from svc.adapters.resolver.port import Outcome
from tests.support.pdns import PDNS_REQUIRED
from tests.support.public_dns import ELSEWHERE, PublicDns, running_public_dns

pytestmark = PDNS_REQUIRED
SVC_NS = ["ns1.svc.test.", "ns2.svc.test."]


@pytest.fixture
async def public(tmp_path: Path) -> AsyncIterator[PublicDns]:
    async with running_public_dns(tmp_path / "public") as world:
        yield world


async def test_what_the_dns_delegates_a_zone_to(public: PublicDns) -> None:
    resolver = DnsResolver.at(public.pdns.host, public.pdns.port)
    await public.delegate("shop.example.", SVC_NS)
    await public.host("bank.example.", {("_svc-verify.www.bank.example.", "TXT"): ['"hello"'],
                                         ("www.bank.example.", "A"): ["192.0.2.1"]})

    shop = await resolver.nameservers("shop.example")  # the parent's referral
    assert shop.outcome is Outcome.found and list(shop.values) == SVC_NS
    bank = await resolver.nameservers("bank.example.")  # the zone's own answer
    assert bank.outcome is Outcome.found and list(bank.values) == ELSEWHERE
    assert (await resolver.nameservers("nowhere.example")).outcome is Outcome.nxdomain
    # A name inside a hosted zone is not delegated anywhere of its own.
    assert (await resolver.nameservers("www.bank.example")).outcome is Outcome.no_answer
    txt = await resolver.txt("_svc-verify.www.bank.example")
    assert txt.outcome is Outcome.found and txt.values == ("hello",)


async def test_the_ds_the_parent_serves(public: PublicDns) -> None:
    """What says a bought domain's DS reached the parent, or left it (domains/dns/registrar_ds.py)."""
    resolver = DnsResolver.at(public.pdns.host, public.pdns.port)
    await public.delegate("signed.example.", SVC_NS)
    await public.delegate("plain.example.", SVC_NS)
    digest = "684a1f049d7d082b7f98691657da5a65764913df7f065f6f8c36edf62d66ca03"
    await public.pdns.nameserver.apply("example.", replace=[
        RRsetData(name="signed.example.", type="DS", ttl=60, records=(f"2371 13 2 {digest}",))], delete=[])
    found = await resolver.ds("signed.example")
    assert found.outcome is Outcome.found and found.values == (f"2371 13 2 {digest.upper()}",)
    assert (await resolver.ds("plain.example.")).outcome is Outcome.no_answer  # delegated, no DS
