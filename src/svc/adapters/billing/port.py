"""The billing provider port: what svc needs of the company that takes the money (docs/billing.md).
A checkout page for the pro plan, a customer portal, a customer session for embedded pages, a
subscription's cancellation scheduled or reversed, and the subscription as the provider has it
(to repair a missed webhook).

The events and signatures are Polar's (spec "Billing"): `subscription_of` reads a webhook's or the
API's subscription object in Polar's shape. Areas import this module only; polar.py implements the
port with Polar's official SDK, and fake.py is a real HTTP server speaking Polar's API for the tests
and for `svc serve` with SVC_BILLING=fake."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import SecretStr

# The statuses that make an org pro (the spec's state table); any other makes it free.
PRO_STATUSES = frozenset({"active", "trialing", "past_due"})


@dataclass(frozen=True)
class Subscription:
    id: str
    status: str
    customer_id: str | None
    customer_external_id: str | None
    # The org the checkout was for (the subscription's metadata.orgSlug).
    org_slug: str | None
    current_period_end: datetime | None
    cancel_at_period_end: bool
    # The subscription's own modified time (else its creation): orders events that arrive late.
    modified_at: datetime | None
    # What it charges a period, in the currency's smallest unit (cents), as the provider says.
    amount: int | None = None
    currency: str | None = None


@dataclass(frozen=True)
class Customer:
    """The provider's customer: its own id, and the external id svc gave it (the org's slug)."""

    id: str
    external_id: str | None


@dataclass(frozen=True)
class Checkout:
    id: str
    url: str
    # open (payable), expired, confirmed, succeeded or failed (Polar's checkout statuses).
    status: str = "open"
    expires_at: datetime | None = None
    # What it charges, in the currency's smallest unit (cents), and for which product.
    amount: int | None = None
    currency: str | None = None
    product_id: str | None = None

    @property
    def payable(self) -> bool:
        """Open and not expired: a person may still pay it."""
        return self.status == "open" and (self.expires_at is None or self.expires_at > datetime.now(UTC))


@dataclass(frozen=True)
class CustomerSession:
    token: str
    portal_url: str
    expires_at: datetime


@dataclass(frozen=True)
class PaidOrder:
    """A one-time order the provider was paid for (order.paid): AI credit bought at a checkout, or
    charged to a saved payment method (an auto top-up). Its metadata is what svc set on it."""

    id: str
    org_slug: str | None
    customer_id: str | None
    metadata: dict[str, Any]
    billing_reason: str
    # What the customer paid for the product, in cents of `currency`: after any discount, before tax
    # (Polar's net_amount). None when the order does not say.
    paid_cents: int | None = None
    currency: str = ""


class BillingUnavailable(Exception):
    """The provider did not answer in time, or failed (5xx, network): try again later."""


class BillingRejected(Exception):
    """The provider refused the request (4xx); the words are its own."""


class NoSuchCustomer(BillingRejected):
    """The provider has no customer (or subscription) by that id."""


class ChargeDeclined(BillingRejected):
    """The saved payment method could not be charged (declined, or it needs the customer present,
    as a 3-D Secure challenge does); the words are the provider's."""


class BillingProvider(Protocol):
    name: str  # "polar": the webhook path's segment
    sandbox: bool  # the provider's test environment
    description: str  # for the banner
    # The secret its webhooks are signed with when the provider's adapter knows it (a fake Polar svc
    # runs makes one for its run); None: SVC_BILLING_WEBHOOK_SECRET's.
    webhook_secret: SecretStr | None

    async def checkout(self, *, org_slug: str, email: str | None, success_url: str) -> Checkout:
        """A hosted checkout for the pro plan, its customer's external id and the subscription's
        metadata.orgSlug set to `org_slug`."""
        ...

    async def customer_session(self, *, external_id: str, return_url: str | None) -> CustomerSession:
        """A session of the customer `external_id` (an hour): its token and the portal's one-time URL."""
        ...

    async def set_cancel(self, subscription_id: str, cancel: bool) -> Subscription:
        """Cancel at the end of the period (True), or reverse that (False)."""
        ...

    async def subscription(self, subscription_id: str) -> Subscription | None: ...

    async def checkout_of(self, checkout_id: str) -> Checkout | None:
        """A checkout as the provider has it now (None: no such checkout)."""
        ...

    async def customer_of(self, external_id: str) -> Customer | None:
        """The customer whose external id is `external_id` (the org's slug), None when there is none
        (nobody ever paid for that org)."""
        ...

    async def subscriptions_of(self, customer_id: str) -> list[Subscription]:
        """Every subscription of the customer (the provider's id), whatever its status, newest first."""
        ...

    # A product for AI credit is configured (else credit checkouts answer 501 billing_off).
    sells_credit: bool

    async def credit_checkout(self, *, org_slug: str, email: str | None, cents: int, metadata: dict[str, Any],
                              success_url: str) -> Checkout:
        """A hosted checkout for `cents` of AI credit (one-time), its payment method kept for later
        charges; `metadata` (orgSlug, microCents) comes back on the order."""
        ...

    async def charge(self, *, customer_id: str, cents: int, metadata: dict[str, Any], key: str) -> PaidOrder | None:
        """Charge the customer's saved payment method now (an off-session order), once per `key`:
        when an order of that key exists already (an attempt that died before it heard the answer),
        that order is answered, or charged if it never was, and no second one is made. The order
        when it is paid (its order.paid webhook follows too), None when the provider charges later.
        ChargeDeclined when it cannot be charged."""
        ...

    async def paid_credit_orders(self, external_id: str) -> list[PaidOrder]:
        """The customer's paid orders of AI credit, newest first (empty: none, or no such customer):
        what the reconcile credits when an order.paid was lost."""
        ...

    async def aclose(self) -> None: ...


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time as Polar writes it ("...Z"), aware; None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def subscription_of(data: dict[str, Any]) -> Subscription:
    """A subscription object in Polar's shape (a webhook's `data`, or the API's answer). KeyError or
    ValueError when it has no id or status."""
    customer: dict[str, Any] = data["customer"] if isinstance(data.get("customer"), dict) else {}
    metadata: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    sub_id, status = data["id"], data["status"]
    if not isinstance(sub_id, str) or not isinstance(status, str) or not sub_id:
        raise ValueError("a subscription needs an id and a status")
    org = metadata.get("orgSlug")
    external = customer.get("external_id")
    return Subscription(id=sub_id, status=status, customer_id=data.get("customer_id") or customer.get("id"),
                        customer_external_id=external if isinstance(external, str) else None,
                        org_slug=org if isinstance(org, str) else None,
                        current_period_end=parse_time(data.get("current_period_end")),
                        cancel_at_period_end=bool(data.get("cancel_at_period_end")),
                        modified_at=parse_time(data.get("modified_at")) or parse_time(data.get("created_at")),
                        amount=data["amount"] if isinstance(data.get("amount"), int) else None,
                        currency=data["currency"] if isinstance(data.get("currency"), str) else None)


def order_of(data: dict[str, Any]) -> PaidOrder:
    """An order object in Polar's shape (order.paid's `data`). KeyError or ValueError without an id."""
    customer: dict[str, Any] = data["customer"] if isinstance(data.get("customer"), dict) else {}
    metadata: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    order_id = data["id"]
    if not isinstance(order_id, str) or not order_id:
        raise ValueError("an order needs an id")
    org = metadata.get("orgSlug")
    external = customer.get("external_id")
    slug = org if isinstance(org, str) and org else external if isinstance(external, str) and external else None
    customer_id = data.get("customer_id") or customer.get("id")
    paid = data.get("net_amount")
    return PaidOrder(id=order_id, org_slug=slug, customer_id=customer_id if isinstance(customer_id, str) else None,
                     metadata=metadata, billing_reason=str(data.get("billing_reason") or ""),
                     paid_cents=paid if isinstance(paid, int) and not isinstance(paid, bool) else None,
                     currency=str(data.get("currency") or "").lower())
