"""The DNS records the mail domain needs (docs/email.md "Outbound", "The mail domain's records"):

- MX at `*.<mail domain>`: every project's address, `<project>.<org>.<mail domain>`, receives at
  svc's SMTP server (SVC_MAIL_MX_HOST, else SVC_PUBLIC_URL's host);
- SPF TXT at `*.<mail domain>`: the envelope sender of a project's mail is its address
  (SVC_MAIL_SPF names the relay's hosts);
- DKIM TXT at `<selector>._domainkey.<mail domain>`: the public half of the domain's key
  (dkim.py); one record serves every address under it;
- DMARC TXT at `_dmarc.<mail domain>` (SVC_MAIL_DMARC).

When a zone of the store holds the mail domain, svc publishes them there itself, managed (the DNS
area's publish_managed), at grant and by a cycle that also repairs them; otherwise they are shown
for the operator to copy to the zone that does (GET .../email/records)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from svc.context import AppContext
from svc.domains.dns import service as dns
from svc.domains.email import dkim, errors, schemas
from svc.domains.email.settings import EmailSettings
from svc.models import ManagedBy
from svc.uow import Tx, UnitOfWork, use_case

MX_PREFERENCE = 10


@dataclass(frozen=True)
class Record:
    name: str  # absolute, without the trailing dot
    type: str
    content: str  # as a DNS provider's form takes it (a TXT unquoted, however long)


def mx_host(ctx: AppContext) -> str:
    settings = ctx.settings_of(EmailSettings)
    return settings.mail_mx_host or urlsplit(ctx.config.settings.public_url).hostname or "localhost"


def wanted(ctx: AppContext, domain: str, public_key: str, selector: str) -> list[Record]:
    settings = ctx.settings_of(EmailSettings)
    return [
        Record(f"*.{domain}", "MX", f"{MX_PREFERENCE} {mx_host(ctx)}."),
        Record(f"*.{domain}", "TXT", settings.mail_spf),
        Record(f"{selector}._domainkey.{domain}", "TXT", dkim.record_text(public_key)),
        Record(f"_dmarc.{domain}", "TXT", settings.mail_dmarc),
    ]


async def needed(uow: UnitOfWork) -> list[Record] | None:
    """The mail domain's records, its DKIM key made if it has none (a write); None: no mail domain."""
    domain = uow.ctx.settings_of(EmailSettings).mail_domain
    if domain is None:
        return None
    await dkim.signing_key(uow.session, uow.ctx.keys, domain)
    key = await dkim.published_key(uow.session, domain)
    assert key is not None
    return wanted(uow.ctx, domain, key.public_key, key.selector)


async def shown(uow: UnitOfWork) -> list[Record] | None:
    """The records as they stand, without writing (None: no mail domain, or no key yet)."""
    domain = uow.ctx.settings_of(EmailSettings).mail_domain
    key = await dkim.published_key(uow.session, domain) if domain else None
    return wanted(uow.ctx, key.domain, key.public_key, key.selector) if key is not None else None


def _managed(records: list[Record]) -> list[dns.ManagedRecord]:
    return [dns.ManagedRecord(name=r.name, type=r.type, records=(r.content,)) for r in records]


async def publish(uow: UnitOfWork) -> bool:
    """The records in the zone of the store holding the mail domain, if one does (call in a write
    transaction); whether they are all in place. Without such a zone nothing is made (the DKIM key
    waits for the first send or look)."""
    domain = uow.ctx.settings_of(EmailSettings).mail_domain
    if domain is None or await dns.zone_holding(uow, domain) is None:
        return False
    records = await needed(uow)
    assert records is not None
    return await dns.publish_managed(uow, domain, _managed(records), ManagedBy.mail)


async def published_in(uow: UnitOfWork, records: list[Record]) -> str | None:
    """The zone the records are published in, or None."""
    domain = uow.ctx.settings_of(EmailSettings).mail_domain
    if domain is None:
        return None
    return await dns.managed_zone(uow, domain, _managed(records), ManagedBy.mail)


@use_case(Tx.WRITE)  # the domain's DKIM key is made on first need, a look included
async def view(uow: UnitOfWork) -> schemas.MailRecords:
    records = await needed(uow)
    if records is None:
        raise errors.EmailNotConfigured()
    zone = await published_in(uow, records)
    return schemas.MailRecords(records=[schemas.DnsRecord(name=r.name, type=r.type, content=r.content)
                                        for r in records], published=zone is not None, zone=zone)
