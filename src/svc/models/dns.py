"""DNS zones and their record sets: svc's store is the source of truth, the nameserver follows it
(domains/dns/jobs.py)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class Zone(Base):
    __tablename__ = "dns_zones"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # RESTRICT: an org is deleted only once it holds no zones (org_not_empty).
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="RESTRICT"), index=True)
    # Absolute, lowercase punycode, trailing dot ("example.com."); unique across svc, since one
    # nameserver serves every org's zones.
    name: Mapped[str] = mapped_column(String(255), unique=True)
    # off | signing | ds_pending | active (states.DnssecState)
    dnssec: Mapped[str] = mapped_column(String(16), default="off")
    # The DS records the owner registered at the parent (zone-file text), as recorded by PUT ds.
    ds: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime]
    # Bumped by every change of the zone or its rrsets; a dns.sync job records the generation it
    # converged the nameserver to, so a burst of changes costs one nameserver write, not one each.
    generation: Mapped[int] = mapped_column(default=1)
    synced_generation: Mapped[int] = mapped_column(default=0)
    # The generation of the last change the record-set keys in dns_pending cannot express (the
    # zone made, DNSSEC switched, drift found): the sync compares the whole zone up to it.
    full_sync_generation: Mapped[int] = mapped_column(default=0)
    # When the zone's pending sync became due (its first change since the last sync): the
    # reconcile leaves a zone whose sync is under way alone, unless it has been due for long.
    sync_due_at: Mapped[datetime]
    # Whether the public DNS sends the zone to svc's nameservers (the registrar's NS point here):
    # None until first checked. Until it does, svc's own answers for the zone prove nothing
    # (docs/dns.md "Delegation"). `delegation_seen`: what the public DNS answered when it does not.
    delegated: Mapped[bool | None] = mapped_column(default=None)
    delegation_checked_at: Mapped[datetime | None] = mapped_column(default=None)
    delegation_seen: Mapped[str | None] = mapped_column(String(500), default=None)
    # A domain bought through svc: where its DS stands at the registrar, which svc feeds itself
    # (states.RegistrarDs). None: registered elsewhere, the owner registers the DS (PUT ds).
    registrar_ds: Mapped[str | None] = mapped_column(String(16), default=None)


class RRset(Base):
    """One (name, type) of a zone with its whole content. The primary key is the rule "one rrset
    per name and type"."""

    __tablename__ = "dns_rrsets"
    # The delegations of a zone (its NS below the apex) are looked up by type on every change: an
    # index keeps that from reading all of a large zone.
    __table_args__ = (Index("ix_dns_rrsets_zone_id_type", "zone_id", "type"),)

    zone_id: Mapped[str] = mapped_column(ForeignKey("dns_zones.id", ondelete="CASCADE"), primary_key=True)
    # Absolute, lowercase, trailing dot.
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    type: Mapped[str] = mapped_column(String(10), primary_key=True)
    ttl: Mapped[int]
    # Zone-file text with absolute names, as dnspython writes it (what the nameserver gets).
    records: Mapped[list[str]] = mapped_column(JSON)
    # null: the user's; "system": the SOA and apex NS (states.ManagedBy). Managed rows are locked.
    managed_by: Mapped[str | None] = mapped_column(String(32))
    updated_at: Mapped[datetime]


class PendingChange(Base):
    """A record set changed in the store and not yet sent to the nameserver: the sync sends these
    keys only (REPLACE with the stored content, or DELETE when the row is gone), so its cost
    follows the change, not the zone's size."""

    __tablename__ = "dns_pending"

    zone_id: Mapped[str] = mapped_column(ForeignKey("dns_zones.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    type: Mapped[str] = mapped_column(String(10), primary_key=True)
    # The zone's generation of the latest change of this key: a sync removes the key only if no
    # newer change came while it was sending.
    generation: Mapped[int]
