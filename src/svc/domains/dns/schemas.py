"""Request and response bodies of the DNS routes, named as the spec and decisions.md spell them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictInt, StringConstraints

from svc import models
from svc.domains.dns.records import relative
from svc.kit.api import ApiInput, ApiModel, Timestamp

# The records' own rules (shape per type, TXT size, ttl range) are checked by domains/dns/records.py
# with the zone known; these bounds only keep a body's size sane.
RecordText = Annotated[str, StringConstraints(max_length=16_384)]


class ZoneCreate(ApiInput):
    # The shape is stated as the `idn-hostname` format, for clients; records.zone_name decides and
    # words the refusal (two labels or more, not svc's own domains; a trailing dot and surrounding
    # whitespace are taken).
    name: Annotated[str, StringConstraints(min_length=1, max_length=300)] = Field(
        json_schema_extra={"format": "idn-hostname"},
        description="The domain, such as example.com: two labels or more, not under svc's own domains; "
        "internationalized names are stored as punycode")


class RRsetPut(ApiInput):
    ttl: StrictInt | None = Field(default=None, description="Seconds, 60 to 86400; default: the set's "
                                  "current TTL, or 3600 for a new set")
    records: Annotated[list[RecordText], Field(max_length=100)] = Field(
        description="The whole new content of the set, each record in zone-file text: 192.0.2.1, "
        '10 mail (relative to the zone) or 10 mail.example.com., "v=spf1 -all" (TXT may be unquoted: '
        "one string; over 255 bytes it is split into 255-byte strings)")


class DnssecSet(ApiInput):
    enabled: StrictBool


class DsSet(ApiInput):
    ds: Annotated[list[Annotated[str, StringConstraints(max_length=1024)]], Field(max_length=8)] = Field(
        description="The DS records registered at the parent zone, such as 12345 13 2 ABCD...; [] records none")


class RRset(ApiModel):
    name: str = Field(description='Relative to the zone; "@" is the apex')
    type: str
    ttl: int
    records: list[str] = Field(description="Zone-file text with absolute names")
    managed_by: str | None = Field(alias="managed_by", description='"system" for the SOA and the apex NS, '
                                   '"project" for the record of a custom hostname (both locked); null for '
                                   "the org's own records")

    @classmethod
    def of(cls, row: models.RRset, zone: str) -> RRset:
        return cls(name=relative(row.name, zone), type=row.type, ttl=row.ttl, records=list(row.records),
                   managed_by=row.managed_by)


class Zone(ApiModel):
    name: str = Field(description="Absolute, lowercase punycode, with the trailing dot")
    dnssec: str = Field(description="off, signing, ds_pending or active")
    ds: list[str] = Field(description="The DS records at the parent: recorded with PUT dnssec/ds, or, for a "
                          "domain bought through svc, the ones svc sent its registrar")
    registrar_ds: str | None = Field(default=None, description=(
        "A domain bought through svc: where its DS stands at the registrar, which svc feeds itself: none, "
        "sending, sent, published (the parent serves it: DNSSEC active), removing, withdrawn (DNSSEC off: "
        "removed at the registrar first, the zone signed until the parent stops serving it). null: the domain "
        "is registered elsewhere, its owner registers the DS"))
    nameservers: list[str] = Field(description="svc's nameservers: point the domain's NS here at the registrar")
    delegated: bool | None = Field(description="Whether the public DNS delegates the zone to svc's nameservers "
                                   "(the registrar's NS point here); null until first checked. Until it does, "
                                   "the zone proves no name in it is the org's")
    delegation_checked_at: Timestamp | None = Field(description="When the delegation was last checked")
    delegation_seen: str | None = Field(description="What the public DNS answered when it does not delegate the "
                                        "zone to svc, in words (\"the parent lists ns1.other.net\"); null once "
                                        "delegated")
    created_at: Timestamp

    @classmethod
    def of(cls, zone: models.Zone, nameservers: list[str]) -> Zone:
        return cls(name=zone.name, dnssec=zone.dnssec, ds=list(zone.ds or []), registrar_ds=zone.registrar_ds,
                   nameservers=nameservers,
                   delegated=zone.delegated, delegation_checked_at=zone.delegation_checked_at,
                   delegation_seen=None if zone.delegated else zone.delegation_seen, created_at=zone.created_at)


class ZoneDetail(Zone):
    rrsets: list[RRset]
    ds_records: list[str] | None = Field(description="While DNSSEC is on: the DS records of the nameserver's "
                                         "signing key, to register at the parent ([] until the zone is "
                                         "signed; null when the nameserver could not be asked)")


class ZoneList(ApiModel):
    zones: list[Zone]
