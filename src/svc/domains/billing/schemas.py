from __future__ import annotations

from typing import Literal

from pydantic import Field

from svc.kit.api import ApiInput, ApiModel, Timestamp


class PlanLimitsView(ApiModel):
    projects: int
    storage_bytes: int
    mail_per_hour: int
    ai_max_output_tokens: int = Field(description="0: the model decides")


class BillingStatus(ApiModel):
    plan: Literal["free", "pro"]
    status: str | None = Field(description="The subscription's status at the provider (pro only): active, "
                                           "trialing, past_due, ...; null on the free plan")
    period_end: Timestamp | None
    cancel_at_period_end: bool = Field(description="Cancellation is scheduled for periodEnd")
    enabled: bool = Field(description="false: billing is not configured on this svc")
    sandbox: bool = Field(description="true: the provider's test environment")
    limits: dict[str, PlanLimitsView] = Field(description="What each plan allows, by plan name")


class CheckoutRequest(ApiInput):
    return_to: str = Field(max_length=2000, description="Where the provider sends the browser back: under "
                                                        "SVC_PUBLIC_URL")


class PortalRequest(ApiInput):
    return_to: str | None = Field(default=None, max_length=2000)


class CancelRequest(ApiInput):
    cancel: bool = Field(description="true: cancel at the end of the period; false: reverse that")


class UrlAnswer(ApiModel):
    url: str


class SessionAnswer(ApiModel):
    token: str = Field(description="The provider's customer session token, for its embedded pages (1 hour)")
    expires_at: Timestamp


class WebhookAnswer(ApiModel):
    applied: bool = Field(description="Whether the delivery changed the org's plan")
