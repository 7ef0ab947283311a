"""AI's bodies (decisions.md "Request and response bodies of the later areas": AIStatus, AICredit,
the ledger page, the catalog). Money is integer micro-cents everywhere, never a float."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from svc.kit.api import ApiInput, ApiModel, Timestamp


class CatalogModel(ApiModel):
    id: str
    lane: Literal["frontier", "value"]
    list_price: bool = Field(description="true: the provider's list price, no margin (frontier)")
    provider: str | None = Field(default=None, description="frontier only: whose model it is")
    input_micro_cents_per_mtok: int = Field(alias="inputMicroCentsPerMTok",
                                             description="micro-cents per one million input tokens")
    output_micro_cents_per_mtok: int = Field(alias="outputMicroCentsPerMTok",
                                              description="micro-cents per one million output tokens")
    context_tokens: int
    max_output_tokens: int


class Catalog(ApiModel):
    models: list[CatalogModel]


class AIStatus(ApiModel):
    granted: bool
    max_output_tokens: int = Field(description="0: the model decides")
    max_input_tokens: int = Field(description="0: the model decides")
    max_calls_per_minute: int
    max_micro_cents_per_day: int
    balance_micro_cents: int = Field(description="The org's balance (may be negative)")
    spent_micro_cents24h: int = Field(alias="spentMicroCents24h",
                                      description="What the project's calls cost in the last 24 hours, from the ledger")


class AutoTopup(ApiModel):
    enabled: bool
    threshold_micro_cents: int | None
    amount_micro_cents: int | None


class AICredit(ApiModel):
    balance_micro_cents: int = Field(description="May be negative: the check precedes a call, the deduction "
                                                 "follows it")
    has_payment_method: bool
    autotopups_today: int = Field(alias="autoTopupsToday")
    autotopup_per_day: int = Field(alias="autoTopupPerDay")
    autotopup: AutoTopup = Field(alias="autoTopup")


class LedgerEntry(ApiModel):
    ledger_id: int = Field(alias="ledger_id", description="The cursor: rows before it with `before`")
    kind: Literal["call", "topup", "autotopup", "adjust"]
    micro_cents: int = Field(description="Signed: a call is negative, a top-up positive")
    created_at: Timestamp
    project: str | None = Field(default=None, description="A call's project (absent otherwise)")
    model: str | None = Field(default=None, description="A call's model (absent otherwise)")


class Ledger(ApiModel):
    entries: list[LedgerEntry]
    next_before: int | None = Field(description="`before` for the next (older) page; null: no more")

    def body(self) -> dict[str, Any]:
        """The page as JSON, an entry's project and model absent (not null) where they do not apply."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True)
        for entry in data["entries"]:
            for name in ("project", "model"):
                if entry[name] is None:
                    del entry[name]
        return data


# What an org can buy, by checkout or auto top-up (decisions.md): $5, $20, $50 in micro-cents.
CREDIT_TIERS = (500_000_000, 2_000_000_000, 5_000_000_000)
Tier = Literal[500_000_000, 2_000_000_000, 5_000_000_000]


class CreditCheckoutRequest(ApiInput):
    micro_cents: Tier = Field(description="A tier: 500000000 ($5), 2000000000 ($20) or 5000000000 ($50)")
    return_to: str = Field(max_length=2000, description="Where the provider sends the browser back: under "
                                                        "SVC_PUBLIC_URL")


class AutoTopupOn(ApiInput):
    enabled: Literal[True] = Field(description="Explicit consent to charges of the stored payment method")
    threshold_micro_cents: int = Field(ge=1, lt=max(CREDIT_TIERS),
                                       description="A top-up when the balance falls below it: above 0, below "
                                                   "amountMicroCents")
    amount_micro_cents: Tier = Field(description="What each top-up buys: a tier")


class AutoTopupOff(ApiInput):
    enabled: Literal[False]


# The two by `enabled` (a union, not a discriminator: OpenAPI's discriminator mapping keys are
# strings, which a boolean's `const` cannot match for tools that read the document).
AutoTopupRequest = AutoTopupOn | AutoTopupOff


class CheckoutUrl(ApiModel):
    url: str = Field(description="The provider's checkout page (embeddable); the balance rises with its order.paid")
