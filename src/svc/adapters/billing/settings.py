"""The billing provider's settings (Polar, or a fake one: docs/billing.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from svc.settings import ComponentSettings


class BillingProviderSettings(ComponentSettings):
    # "off" (plans from `svc admin plan`), "polar" (Polar's API) or "fake" (svc runs a fake Polar
    # itself, for development).
    billing: Literal["off", "polar", "fake"] = "off"
    # Polar's webhook secret; with fake, made for the run when unset.
    billing_webhook_secret: SecretStr | None = None
    # How the secret keys the HMAC: "standard" (Standard Webhooks: `whsec_` + base64, the decoded
    # bytes), "polar" (the whole secret's UTF-8 bytes) or "either" (kit/webhook_signatures.py).
    billing_webhook_secret_form: Literal["standard", "polar", "either"] = "either"
    # Polar's sandbox instead of production.
    billing_sandbox: bool = False
    # How long svc waits for the provider before answering 502 billing_unavailable, in seconds.
    billing_timeout_seconds: float = Field(default=8.0, gt=0, le=60)
    # An organization access token of Polar's.
    polar_access_token: SecretStr | None = None
    # Polar's API at another address than Polar's own (a proxy, or a fake Polar run apart from svc,
    # as the crash tests run one so that it outlives a kill -9 of svc).
    polar_api_url: str | None = None
    # The product that is the pro plan.
    polar_product_id: str | None = None
    # A one-time product for AI credit, its price set per purchase (docs/ai.md): without it, buying
    # credit answers 501 billing_off.
    polar_credit_product_id: str | None = None
