"""The billing area's own settings."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class BillingSettings(AreaSettings):
    # How often every paying org is compared with the provider (a missed webhook repaired).
    billing_reconcile_seconds: float = Field(default=24 * 3600.0, ge=60.0, le=30 * 24 * 3600)
