"""The mail domain's DNS records (docs/email.md "Outbound"): published by svc in its own zone when
it holds the mail domain (the test's real PowerDNS answers them, and a sent message's DKIM signature
verifies against what it answers), shown to copy otherwise."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import dkim
import dns.resolver
import pytest

from svc.app import default_adapters
from svc.domains.email.kinds import EmailJob
from svc.settings import Config
from svc.uow import unit_of_work
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.pdns import Pdns, clear_zones
from tests.support.smtp import SmtpSink
from tests.support.team import make_team
from tests.support.wait import until

MAIL_DOMAIN = "mail.example-mail.test"
E = "/v1/orgs/acme/projects/site/email"
MX_HOST = "mx.example-mail.test"


@pytest.fixture
async def dns_mail_svc(dns_settings: Config, pdns: Pdns, sink: SmtpSink) -> AsyncIterator[Svc]:
    """svc driving the shared PowerDNS, with a mail domain and the relay."""
    await clear_zones(pdns)
    config = configured(dns_settings, mail_domain=MAIL_DOMAIN, mail_mx_host=MX_HOST, smtp_relay_url=sink.url)
    adapters = default_adapters(config)
    adapters.nameserver = pdns.nameserver
    async with running_svc(config, adapters) as running:
        yield running


def _by_kind(records: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    return {(r["name"], r["type"]): r["content"] for r in records}


async def test_records_are_listed_to_copy_without_a_zone(dns_mail_svc: Svc) -> None:
    team = await make_team(dns_mail_svc, project="site")
    got = (await team.vic.client.get(E + "/records")).json()
    assert got["published"] is False and got["zone"] is None
    records = _by_kind(got["records"])
    assert records[(f"*.{MAIL_DOMAIN}", "MX")] == f"10 {MX_HOST}."
    assert records[(f"*.{MAIL_DOMAIN}", "TXT")].startswith("v=spf1")
    assert records[(f"_dmarc.{MAIL_DOMAIN}", "TXT")].startswith("v=DMARC1")
    dkim_record = records[(f"svc1._domainkey.{MAIL_DOMAIN}", "TXT")]
    assert dkim_record.startswith("v=DKIM1; k=rsa; p=") and len(dkim_record) > 300
    # The same key on every look.
    assert (await team.vic.client.get(E + "/records")).json() == got


async def test_records_are_published_in_svcs_own_zone(dns_mail_svc: Svc, pdns: Pdns, sink: SmtpSink) -> None:
    team = await make_team(dns_mail_svc, project="site")
    r = await team.alice.client.post("/v1/orgs/acme/dns/zones", json={"name": "example-mail.test"})
    assert r.status_code in (200, 201), r.text
    assert (await team.bob.client.post(E)).status_code == 200  # the grant publishes them
    got = (await team.vic.client.get(E + "/records")).json()
    assert got["published"] is True and got["zone"] == "example-mail.test."
    records = _by_kind(got["records"])

    address = f"site.acme.{MAIL_DOMAIN}"
    await until(lambda: _answered(pdns, address, "MX"), what="the wildcard MX served")
    assert await pdns.answer(address, "MX") == [f"10 {MX_HOST}."]
    spf = await pdns.answer(address, "TXT")
    assert spf == [f'"{records[(f"*.{MAIL_DOMAIN}", "TXT")]}"']
    await until(lambda: _answered(pdns, f"_dmarc.{MAIL_DOMAIN}", "TXT"), what="DMARC served")

    # Managed: the zone's owner cannot change them.
    put = await team.alice.client.put("/v1/orgs/acme/dns/zones/example-mail.test/rrsets/_dmarc.mail/TXT",
                                      json={"ttl": 300, "records": ["v=DMARC1; p=reject"]})
    assert_error(put, 409, "managed_rrset")

    # A sent message verifies against the key PowerDNS serves.
    await until(lambda: _answered(pdns, f"svc1._domainkey.{MAIL_DOMAIN}", "TXT"), what="DKIM served")
    sent = await team.bob.client.post(E + "/send", json={"to": ["carol@example.com"], "subject": "Hi", "text": "x"})
    assert sent.status_code == 202, sent.text
    [received] = await sink.wait_for(1)  # this svc's own job worker sends it
    resolver = pdns.resolver()

    def served_txt(name: bytes, timeout: int = 5) -> bytes | None:
        answer = resolver.resolve(name.decode(), "TXT")
        return b"".join(b"".join(rd.strings) for rd in answer)

    assert dkim.verify(received.message.as_bytes(), dnsfunc=served_txt)


async def _answered(pdns: Pdns, name: str, rtype: str) -> bool:
    try:
        return bool(await pdns.answer(name, rtype))
    except dns.exception.DNSException:
        return False


async def test_a_zone_made_later_gets_the_records_from_the_cycle(dns_mail_svc: Svc, pdns: Pdns) -> None:
    team = await make_team(dns_mail_svc, project="site")
    assert (await team.bob.client.post(E)).status_code == 200
    r = await team.alice.client.post("/v1/orgs/acme/dns/zones", json={"name": "example-mail.test"})
    assert r.status_code in (200, 201), r.text
    assert (await team.vic.client.get(E + "/records")).json()["published"] is False
    async with unit_of_work(dns_mail_svc.ctx) as uow:
        uow.enqueue(EmailJob.records_cycle, {}, max_attempts=1)
    await until(lambda: _published(team), what="the records published by the cycle")
    await until(lambda: _answered(pdns, f"_dmarc.{MAIL_DOMAIN}", "TXT"), what="DMARC served")


async def _published(team: Any) -> bool:
    return bool((await team.vic.client.get(E + "/records")).json()["published"])
