"""The billing provider port (port.py) on Polar, with its official SDK (polar-sdk, API version
2026-10). Production or sandbox by setting; `base_url` points it at another server speaking Polar's
API (the fake, fake.py). Every call is bounded (SVC_BILLING_TIMEOUT_SECONDS): a provider that does
not answer is BillingUnavailable, never a hung request."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from polar import PolarClientError, PolarError, PolarNetworkError
from polar.v2026_10 import PolarAsync
from polar.v2026_10 import outputs as polar
from pydantic import SecretStr

from svc.adapters.billing.port import (
    BillingRejected,
    BillingUnavailable,
    ChargeDeclined,
    Checkout,
    Customer,
    CustomerSession,
    NoSuchCustomer,
    PaidOrder,
    Subscription,
    order_of,
    parse_time,
    subscription_of,
)

# The reconcile reads at most this many pages of a hundred orders (newest first).
ORDER_PAGES = 10
# The reconcile reads at most this many pages of a hundred subscriptions of a customer; more is
# an error (never a verdict from part of them).
SUBSCRIPTION_PAGES = 50
# The metadata an off-session order carries its charge's key in (Polar has no idempotency key).
CHARGE_KEY = "chargeKey"

T = TypeVar("T")


async def _unless_missing(call: Awaitable[T]) -> T | None:
    """Polar's answer to a look-up, None for its 404; any other failure is the port's error."""
    try:
        return await call
    except PolarClientError as exc:
        if exc.status_code == 404:
            return None
        raise _error(exc) from None
    except PolarError as exc:
        raise _error(exc) from None


class PolarBilling:
    name = "polar"

    def __init__(self, *, access_token: str, product_id: str, sandbox: bool, base_url: str | None = None,
                 timeout_seconds: float = 8.0, credit_product_id: str | None = None,
                 webhook_secret: SecretStr | None = None) -> None:
        self.sandbox = sandbox
        self.webhook_secret = webhook_secret
        self.product_id = product_id
        # A one-time product whose price svc sets per purchase (a tier of AI credit).
        self.credit_product_id = credit_product_id
        self.sells_credit = bool(credit_product_id)
        self._client = PolarAsync(access_token, environment="sandbox" if sandbox else "production",
                                  base_url=base_url, timeout=timeout_seconds)
        where = base_url or ("Polar's sandbox" if sandbox else "Polar")
        self.description = f"{where} (product {product_id})"

    async def checkout(self, *, org_slug: str, email: str | None, success_url: str) -> Checkout:
        try:
            made = await self._client.checkouts.create(
                products=[self.product_id], external_customer_id=org_slug, metadata={"orgSlug": org_slug},
                success_url=success_url, customer_email=email)
        except PolarError as exc:
            raise _error(exc) from None
        return _checkout(made)

    async def credit_checkout(self, *, org_slug: str, email: str | None, cents: int, metadata: dict[str, Any],
                              success_url: str) -> Checkout:
        product = self._credit_product()
        try:
            made = await self._client.checkouts.create(
                products=[product], prices={product: [{"amount_type": "fixed", "price_amount": cents,
                                                       "price_currency": "usd"}]},
                external_customer_id=org_slug, metadata=metadata, success_url=success_url, customer_email=email)
        except PolarError as exc:
            raise _error(exc) from None
        return _checkout(made)

    async def charge(self, *, customer_id: str, cents: int, metadata: dict[str, Any], key: str) -> PaidOrder | None:
        # Polar's off-session charge: a draft order, then its finalize, which charges the
        # customer's default payment method at once (402 when declined or it needs the customer).
        # Polar takes no idempotency key: the order carries it in its metadata (chargeKey), and
        # an earlier attempt's order of that key is found first (metadata filter), so a retry
        # after a crash between the charge and svc's record never charges twice.
        try:
            earlier = await self._client.orders.list(customer_id=customer_id, product_id=self._credit_product(),
                                                     metadata={CHARGE_KEY: key}, limit=10)
            order = next((o for o in earlier.items if o.metadata.get(CHARGE_KEY) == key), None)
            if order is None:
                order = await self._client.orders.create(customer_id=customer_id, product_id=self._credit_product(),
                                                         amount=cents, metadata=metadata | {CHARGE_KEY: key})
            if order.status == "draft":
                order = await self._client.orders.finalize(order.id)
            elif order.status == "void":
                raise BillingRejected(f"Polar voided the order {order.id} of this charge")
        except PolarClientError as exc:
            if exc.status_code == 402:
                raise ChargeDeclined(f"Polar could not charge the saved payment method: {exc.error}") from None
            raise _error(exc) from None
        except PolarError as exc:
            raise _error(exc) from None
        return _order(order) if order.paid else None

    def _credit_product(self) -> str:
        if not self.credit_product_id:
            raise BillingRejected("no product for AI credit is configured (SVC_POLAR_CREDIT_PRODUCT_ID)")
        return self.credit_product_id

    async def customer_session(self, *, external_id: str, return_url: str | None) -> CustomerSession:
        try:
            made = await self._client.customer_sessions.create(external_customer_id=external_id,
                                                               return_url=return_url)
        except PolarError as exc:
            raise _error(exc) from None
        expires = parse_time(made.expires_at) or datetime.now(UTC) + timedelta(hours=1)
        return CustomerSession(token=made.token, portal_url=made.customer_portal_url, expires_at=expires)

    async def set_cancel(self, subscription_id: str, cancel: bool) -> Subscription:
        try:
            updated = await self._client.subscriptions.update(subscription_id, cancel_at_period_end=cancel)
        except PolarError as exc:
            raise _error(exc) from None
        return _subscription(updated)

    async def subscription(self, subscription_id: str) -> Subscription | None:
        found = await _unless_missing(self._client.subscriptions.get(subscription_id))
        return _subscription(found) if found is not None else None

    async def checkout_of(self, checkout_id: str) -> Checkout | None:
        found = await _unless_missing(self._client.checkouts.get(checkout_id))
        return _checkout(found) if found is not None else None

    async def customer_of(self, external_id: str) -> Customer | None:
        # Polar's look-up by external id (GET /v1/customers/external/{external_id}): 404 when none.
        found = await _unless_missing(self._client.customers.get_external(external_id))
        return Customer(id=found.id, external_id=found.external_id) if found is not None else None

    async def subscriptions_of(self, customer_id: str) -> list[Subscription]:
        # Every status (no `active` filter): a canceled one is as much the truth as a live one, and
        # every page of them: a live one may sit behind a hundred ended ones (newest first).
        subs: list[Subscription] = []
        try:
            for page in range(1, SUBSCRIPTION_PAGES + 1):
                found = await self._client.subscriptions.list(customer_id=customer_id, page=page, limit=100)
                subs += [_subscription(item) for item in found.items]
                if page >= found.pagination.max_page:
                    break
            else:
                raise BillingUnavailable(f"Polar lists more than {SUBSCRIPTION_PAGES * 100} subscriptions of "
                                         f"customer {customer_id}: not all were read, nothing was compared")
        except PolarError as exc:
            raise _error(exc) from None
        return sorted(subs, key=lambda s: s.modified_at or datetime.min.replace(tzinfo=UTC), reverse=True)

    async def paid_credit_orders(self, external_id: str) -> list[PaidOrder]:
        if not self.credit_product_id:
            return []
        found: list[PaidOrder] = []
        try:
            for page in range(1, ORDER_PAGES + 1):
                listed = await self._client.orders.list(external_customer_id=external_id,
                                                        product_id=self.credit_product_id, status="paid",
                                                        page=page, limit=100)
                found += [_order(item) for item in listed.items]
                if page >= listed.pagination.max_page:
                    break
        except PolarClientError as exc:
            if exc.status_code == 404:
                return []
            raise _error(exc) from None
        except PolarError as exc:
            raise _error(exc) from None
        return found

    async def aclose(self) -> None:
        await self._client.__aexit__()


def _checkout(made: polar.Checkout) -> Checkout:
    return Checkout(id=made.id, url=made.url, status=made.status, expires_at=parse_time(made.expires_at),
                    amount=made.total_amount, currency=made.currency, product_id=made.product_id)


def _subscription(sub: polar.Subscription) -> Subscription:
    """The SDK's subscription in the port's terms (the same reading as a webhook's: subscription_of)."""
    return subscription_of({
        "id": sub.id, "status": sub.status, "customer_id": sub.customer_id, "metadata": dict(sub.metadata),
        "customer": {"id": sub.customer.id, "external_id": sub.customer.external_id},
        "current_period_end": sub.current_period_end, "cancel_at_period_end": sub.cancel_at_period_end,
        "modified_at": sub.modified_at, "created_at": sub.created_at, "amount": sub.amount,
        "currency": sub.currency})


def _order(order: polar.Order) -> PaidOrder:
    """The SDK's order in the port's terms (the same reading as order.paid's: order_of)."""
    return order_of({"id": order.id, "customer_id": order.customer_id, "metadata": dict(order.metadata),
                     "customer": {"id": order.customer.id, "external_id": order.customer.external_id},
                     "billing_reason": order.billing_reason, "net_amount": order.net_amount,
                     "currency": order.currency})


def _error(exc: PolarError) -> Exception:
    """The SDK's failure in the port's terms: 4xx refused in Polar's words, else unavailable."""
    if isinstance(exc, PolarNetworkError) or (isinstance(exc, PolarClientError) and exc.status_code == 429):
        return BillingUnavailable(exc.message)
    if isinstance(exc, PolarClientError):
        if exc.status_code == 404:
            return NoSuchCustomer(f"Polar has no such customer or subscription: {exc.error}")
        return BillingRejected(f"Polar refused the request ({exc.status_code}): {exc.error}")
    return BillingUnavailable(exc.message)
