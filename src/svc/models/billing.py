"""Billing: an org's subscription as the provider last said it, and every webhook delivery received
(the inbox an operator reads and replays from)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class BillingAccount(Base):
    """An org's standing with the billing provider: its customer (the org's slug as the provider's
    external id), and its subscription as the newest event said (the plan follows `status`).
    Created at the first checkout; an org without a row never paid."""

    __tablename__ = "billing_accounts"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    customer_external_id: Mapped[str] = mapped_column(String(64))
    customer_id: Mapped[str | None] = mapped_column(String(100))
    subscription_id: Mapped[str | None] = mapped_column(String(100), index=True)
    # The provider's status (active, trialing, past_due, canceled, unpaid, ...); None before one.
    status: Mapped[str | None] = mapped_column(String(32))
    current_period_end: Mapped[datetime | None]
    cancel_at_period_end: Mapped[bool] = mapped_column(default=False)
    # The subscription's own modified time, as the provider said it: an older event never
    # overwrites a newer one.
    provider_modified_at: Mapped[datetime | None]
    # Every subscription of the org svc has heard of, by id, each as its own newest event said it
    # ({"status", "modifiedAt", "periodEnd", "cancelAtPeriodEnd"}): events are followed per
    # subscription, and the columns above show the org's live one (domains/billing/subscriptions.py).
    subscriptions: Mapped[dict[str, Any] | None]
    # How many of them are live (active, trialing, past_due): more than one is a duplicate the
    # operator is shown (the customer pays twice).
    live_subscriptions: Mapped[int] = mapped_column(default=0, server_default="0")
    # The open checkout for the pro plan (one at a time: a second checkout answers this one).
    checkout_id: Mapped[str | None] = mapped_column(String(100))
    checkout_url: Mapped[str | None] = mapped_column(String(2000))
    checkout_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class BillingEvent(Base):
    """One webhook delivery, by its webhook-id (unique: a redelivery, even a concurrent one, is
    applied once). `outcome`: applied, duplicate, stale, ignored, failed; `detail` says why."""

    __tablename__ = "billing_events"

    webhook_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    type: Mapped[str] = mapped_column(String(100))
    received_at: Mapped[datetime] = mapped_column(index=True)
    outcome: Mapped[str] = mapped_column(String(16))
    detail: Mapped[str | None] = mapped_column(String(1000))
    org_slug: Mapped[str | None] = mapped_column(String(64))
    # The event as received (Polar's payload holds no secret), for a replay.
    payload: Mapped[dict[str, Any]]
    # How many times it was received (redeliveries counted here, not as rows).
    deliveries: Mapped[int] = mapped_column(default=1)
