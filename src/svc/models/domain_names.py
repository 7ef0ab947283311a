"""Domains an org bought through the registrar or imported, and each one's history (what the
purchase saga did step by step, renewals, locks, syncs). The registrant's contact is never here."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, UniqueConstraint
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
    # Set while status is registering and the registration was refused for good: the charge is to
    # be given back, and that refund is the saga's next step (a resend retries it, never registers).
    # {"kind": "rejected" | "unavailable" | "declined", "why": words, "field": the input named or None}.
    refund_due: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))  # None: SQL NULL
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


class DomainRenewal(Base):
    """One renewal of a purchased domain: one charge at the registrar under `key`. Written pending
    before the registrar is asked, done once its answer is recorded (with the history line and the
    audit event, once). A request that finds a pending renewal of the same length continues it under
    the same key (a resend after a lost answer or a crash, or a concurrent identical request), so
    the registrar charges it once; `request_key` is the request's Idempotency-Key, if it sent one:
    a replay of a done one answers without asking the registrar."""

    __tablename__ = "domain_renewals"
    __table_args__ = (UniqueConstraint("domain_id", "request_key"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    domain_id: Mapped[str] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"), index=True)
    request_key: Mapped[str | None] = mapped_column(String(200))
    # The registrar's idempotency key: "<domain id>:renew:<this id>:<the expiry it starts from>:<years>"
    # (DNSimple's adapter reads the date: a renewal whose expiry moved past it is done).
    key: Mapped[str] = mapped_column(String(300))
    years: Mapped[int] = mapped_column(Integer)
    price_cents: Mapped[int | None] = mapped_column(Integer)  # the registrar's renewal price, asked first
    status: Mapped[str] = mapped_column(String(16))  # pending | done
    created_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime]
    done_at: Mapped[datetime | None]
