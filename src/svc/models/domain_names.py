"""Domains an org bought through the registrar or imported, and each one's history (what the
purchase saga did step by step, renewals, locks, syncs). The registrant's contact is never here."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class Domain(Base):
    """A domain of an org. A purchase walks `status` pending_payment -> registering -> setting_ns ->
    active, each step written before the next is tried (domain_names/saga.py); an import is active
    at once. The name is unique across orgs."""

    __tablename__ = "domains"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # RESTRICT: an org holding domains cannot be deleted (org_not_empty lists them): a bought
    # domain must not vanish with it.
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(253), unique=True)
    status: Mapped[str] = mapped_column(String(24))  # DomainStatus
    source: Mapped[str] = mapped_column(String(16))  # DomainSource
    years: Mapped[int] = mapped_column(Integer, default=1)
    # The price quoted and charged for the registration (cents), and the charge that paid it.
    price_cents: Mapped[int | None] = mapped_column(Integer)
    charge_id: Mapped[str | None] = mapped_column(String(200))
    # Which payment attempt this is: the registrar's idempotency key is "<id>:<attempt>", so a resend
    # after a crash is charged once, and a new request after a refund is a new charge.
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    # What the registrar said last (None for an import before the owner's first sync).
    expires_at: Mapped[datetime | None]
    locked: Mapped[bool] = mapped_column(default=False)
    auto_renew: Mapped[bool] = mapped_column(default=True)
    nameservers: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Why the saga stopped where it is, in words (None once active).
    last_error: Mapped[str | None] = mapped_column(String(500))
    synced_at: Mapped[datetime | None]
    # When the 30-days-before-expiry notice went (one per expiry date).
    expiry_notified_for: Mapped[datetime | None]
    created_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class DomainEvent(Base):
    """One line of a domain's history: `action` (payment, registered, nameservers, zone, refund,
    renew, lock, auto_renew, sync, ...) and what happened in words."""

    __tablename__ = "domain_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    domain_id: Mapped[str] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime]
    action: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(String(500))
