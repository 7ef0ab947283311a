"""A fake Polar: a real HTTP server speaking the part of Polar's API svc uses (checkouts, customer
sessions, subscriptions, off-session orders; answers in the SDK's own shapes, shapes.py), with the pages a person
sees (a hosted checkout a browser completes, a customer portal), and Polar's webhooks sent back to
svc, signed as Polar signs them (Standard Webhooks, the secret's UTF-8 bytes as the key) or, given a
secret in Standard Webhooks' form, with its decoded bytes (kit/webhook_signatures.py), retried on anything but 2xx.

For the tests, `/_fake/...`: hold deliveries and release them in reverse order, lose the next one,
redeliver one by id, change a subscription without telling svc (a lost event), expire a checkout,
make the API fail or hang, carry out a call and withhold its answer, decline off-session charges,
take a discount off the next orders. Run by
the tests and by `svc serve` with SVC_BILLING=fake (in-process, on a free port).

Test cards: 4242 4242 4242 4242 pays; 4000 0000 0000 0002 is declined. A checkout for AI credit
(the credit product, its price set per checkout) keeps the card as the customer's payment method,
which an off-session order (POST /v1/orders/, then its finalize) charges later."""

from __future__ import annotations

import asyncio
import html
import json
import logging
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from polar.v2026_10 import outputs
from standardwebhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from svc.adapters.billing.shapes import shape
from svc.kit.local_server import LocalServer
from svc.kit.webhook_signatures import SecretForm, signing_key

log = logging.getLogger("svc.billing.fake")

GOOD_CARD = "4242424242424242"
DECLINED_CARD = "4000000000000002"
RETRIES = (0.1, 0.3, 1.0, 2.0, 5.0)


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


@dataclass
class Delivery:
    webhook_id: str
    type: str
    body: str
    attempts: int = 0
    status: int | None = None


@dataclass
class FakeState:
    checkouts: dict[str, dict[str, Any]] = field(default_factory=dict)
    customers: dict[str, dict[str, Any]] = field(default_factory=dict)  # by external id
    subscriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)  # token -> external id
    deliveries: dict[str, Delivery] = field(default_factory=dict)
    held: list[Delivery] = field(default_factory=list)
    holding: bool = False
    lose_next: int = 0
    api_mode: str = "ok"  # ok | error | hang
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Off-session charges to decline from now on (the saved card expired, say).
    decline_charges: bool = False
    # Cents off the next paid one-time orders (a discount code the customer used at the provider).
    discount_cents: int = 0
    # Calls carried out whose answer waits until the test says (`answer`): checkout, finalize,
    # cancel, once each. The crash tests kill svc while it waits for it.
    withhold: set[str] = field(default_factory=set)


class FakePolar:
    def __init__(self, *, webhook_secret: str, hook_url: str, access_token: str = "polar_oat_fake",  # noqa: S107
                 product_id: str = "prod_fake_pro", credit_product_id: str = "prod_fake_credit",
                 http: httpx.AsyncClient | None = None, secret_form: SecretForm = "either") -> None:  # noqa: S107
        self.webhook = Webhook(signing_key(webhook_secret, secret_form))
        self.hook_url = hook_url
        self.access_token = access_token
        self.product_id = product_id
        self.credit_product_id = credit_product_id
        self.state = FakeState()
        self.url = ""
        self._sending: set[asyncio.Task[int]] = set()
        self._stopping = asyncio.Event()
        self._answering = asyncio.Event()
        # Where webhooks go: svc over HTTP, or a test's client of svc in-process.
        self._http = http or httpx.AsyncClient(timeout=10, trust_env=False)
        self.app = Starlette(routes=[
            Route("/v1/checkouts/", self.create_checkout, methods=["POST"]),
            Route("/v1/checkouts/{id}", self.get_checkout, methods=["GET"]),
            Route("/v1/customers/external/{external_id}", self.get_customer_external, methods=["GET"]),
            Route("/v1/customer-sessions/", self.create_session, methods=["POST"]),
            Route("/v1/subscriptions/", self.list_subscriptions, methods=["GET"]),
            Route("/v1/subscriptions/{id}", self.get_subscription, methods=["GET"]),
            Route("/v1/subscriptions/{id}", self.update_subscription, methods=["PATCH"]),
            Route("/v1/orders/", self.list_orders, methods=["GET"]),
            Route("/v1/orders/", self.create_order, methods=["POST"]),
            Route("/v1/orders/{id}/finalize", self.finalize_order, methods=["POST"]),
            Route("/checkout/{id}", self.checkout_page, methods=["GET"]),
            Route("/checkout/{id}", self.pay, methods=["POST"]),
            Route("/portal", self.portal_page, methods=["GET"]),
            Route("/portal", self.portal_action, methods=["POST"]),
            Route("/_fake/{action}", self.control, methods=["POST"]),
            Route("/_fake/deliveries", self.list_deliveries, methods=["GET"]),
            Route("/_fake/checkouts", self.list_checkouts, methods=["GET"]),
        ])
        self._server = LocalServer(self.app, "fake-polar")

    # --- running ---

    async def start(self, host: str = "127.0.0.1") -> None:
        self.url = await self._server.start(host)

    async def stop(self) -> None:
        self._stopping.set()
        for task in list(self._sending):
            task.cancel()
        await self._server.stop()
        await self._http.aclose()

    def withhold(self, step: str) -> None:
        """The next `step` (checkout, finalize, cancel) is carried out and its answer withheld."""
        self.state.withhold.add(step)
        self._answering.clear()

    def answer(self) -> None:
        """The withheld answers go out (to whoever still waits for them)."""
        self.state.withhold.clear()
        self._answering.set()

    async def _answered(self, step: str) -> None:
        if step in self.state.withhold:
            self.state.withhold.discard(step)
            stopping = asyncio.ensure_future(self._stopping.wait())
            answering = asyncio.ensure_future(self._answering.wait())
            await asyncio.wait((stopping, answering), return_when=asyncio.FIRST_COMPLETED)
            for waiter in (stopping, answering):
                waiter.cancel()

    # --- the API ---

    async def _api(self, request: Request) -> Response | None:
        """Refuses a request without the access token, or as the test asked (error, hang)."""
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            return JSONResponse({"error": "invalid_token", "error_description": "no such access token"}, 401)
        if self.state.api_mode == "error":
            return JSONResponse({"detail": "internal error"}, 500)
        if self.state.api_mode == "hang":
            await self._stopping.wait()  # never answered while the fake runs
            return JSONResponse({"detail": "stopped"}, 503)
        return None

    async def create_checkout(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        body = await request.json()
        products = body.get("products")
        amount: Any = 2000
        if products == [self.credit_product_id]:
            # The price of this checkout, set by svc (Polar's ad-hoc prices).
            price = ((body.get("prices") or {}).get(self.credit_product_id) or [{}])[0]
            amount = price.get("price_amount") if price.get("amount_type") == "fixed" else None
            if not isinstance(amount, int) or amount < 50:
                return _invalid("prices", "a fixed price of at least 50 cents")
        elif products != [self.product_id]:
            return _invalid("products", "no such product")
        checkout_id = _id("chk")
        checkout = self.state.checkouts[checkout_id] = {
            "id": checkout_id, "external_customer_id": body.get("external_customer_id"),
            "metadata": body.get("metadata") or {}, "success_url": body.get("success_url"),
            "email": body.get("customer_email"), "status": "open", "product": products[0], "amount": amount,
            "client_secret": secrets.token_urlsafe(16), "expires_at": _iso(datetime.now(UTC) + timedelta(hours=1))}
        await self._answered("checkout")
        return JSONResponse(self._checkout_json(checkout), 201)

    async def get_checkout(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        checkout = self.state.checkouts.get(request.path_params["id"])
        if checkout is None:
            return JSONResponse({"error": "ResourceNotFound", "detail": "Checkout session not found"}, 404)
        return JSONResponse(self._checkout_json(checkout))

    def _checkout_json(self, checkout: dict[str, Any]) -> dict[str, Any]:
        # Polar's checkout expires unpaid after its hour: "expired" from then on.
        status = checkout["status"]
        expires = datetime.fromisoformat(checkout["expires_at"].replace("Z", "+00:00"))
        if status == "open" and expires <= datetime.now(UTC):
            status = "expired"
        return shape(outputs.Checkout, id=checkout["id"], url=f"{self.url}/checkout/{checkout['id']}",
                     status=status, success_url=checkout["success_url"] or "",
                     client_secret=checkout["client_secret"], expires_at=checkout["expires_at"],
                     metadata=checkout["metadata"], amount=checkout["amount"], total_amount=checkout["amount"],
                     net_amount=checkout["amount"], currency="usd", product_id=checkout["product"],
                     external_customer_id=checkout["external_customer_id"],
                     subscription_id=checkout.get("subscription_id"))

    async def get_customer_external(self, request: Request) -> Response:
        """Polar's customer by the external id it was given (the org's slug): 404 when none."""
        if (refused := await self._api(request)) is not None:
            return refused
        customer = self.state.customers.get(request.path_params["external_id"])
        if customer is None:
            return JSONResponse({"error": "ResourceNotFound", "detail": "Customer not found"}, 404)
        return JSONResponse(self._customer_json(customer, outputs.Customer))

    async def create_session(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        body = await request.json()
        external = body.get("external_customer_id")
        customer = self.state.customers.get(external or "")
        if customer is None:
            return JSONResponse({"error": "ResourceNotFound", "detail": "Customer not found"}, 404)
        token = secrets.token_urlsafe(24)
        self.state.sessions[token] = external
        return JSONResponse(shape(outputs.CustomerSession, id=_id("cs"), token=token,
                                  customer_portal_url=f"{self.url}/portal?token={token}",
                                  expires_at=_iso(datetime.now(UTC) + timedelta(hours=1)),
                                  return_url=body.get("return_url"), customer_id=customer["id"],
                                  customer=self._customer_json(customer, outputs.Customer)), 201)

    async def list_subscriptions(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        external = request.query_params.get("external_customer_id")
        customer_id = request.query_params.get("customer_id")
        items = [self._subscription_json(s) for s in self.state.subscriptions.values()
                 if (external is None or s["external_id"] == external)
                 and (customer_id is None or self.state.customers[s["external_id"]]["id"] == customer_id)]
        items.reverse()  # Polar's default sorting: the newest started first
        try:
            page, limit = int(request.query_params.get("page", "1")), int(request.query_params.get("limit", "10"))
        except ValueError:
            return _invalid("page", "an integer")
        if page < 1 or not 1 <= limit <= 100:
            return _invalid("limit", "page at least 1, limit 1 to 100")
        return JSONResponse({"items": items[(page - 1) * limit:page * limit],
                             "pagination": {"total_count": len(items), "max_page": max(1, -(-len(items) // limit))}})

    async def get_subscription(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        sub = self.state.subscriptions.get(request.path_params["id"])
        if sub is None:
            return JSONResponse({"error": "ResourceNotFound", "detail": "Not found"}, 404)
        return JSONResponse(self._subscription_json(sub))

    async def update_subscription(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        sub = self.state.subscriptions.get(request.path_params["id"])
        if sub is None:
            return JSONResponse({"error": "ResourceNotFound", "detail": "Not found"}, 404)
        body = await request.json()
        if "cancel_at_period_end" in body:
            self._set_cancel(sub, bool(body["cancel_at_period_end"]))
        await self._answered("cancel")
        return JSONResponse(self._subscription_json(sub))

    async def create_order(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        body = await request.json()
        customer = next((c for c in self.state.customers.values() if c["id"] == body.get("customer_id")), None)
        if customer is None:
            return _invalid("customer_id", "no such customer")
        if body.get("product_id") != self.credit_product_id:
            return _invalid("product_id", "no such one-time product")
        amount = body.get("amount")
        if not isinstance(amount, int) or amount < 50:
            return _invalid("amount", "at least 50 cents")
        order: dict[str, Any] = {"id": _id("ord"), "status": "draft", "customer": customer, "amount": amount,
                                 "metadata": dict(body.get("metadata") or {}), "billing_reason": "purchase",
                                 "discount": self.state.discount_cents, "created_at": _iso(datetime.now(UTC))}
        self.state.orders[order["id"]] = order
        return JSONResponse(self._order_json(order), 201)

    async def finalize_order(self, request: Request) -> Response:
        if (refused := await self._api(request)) is not None:
            return refused
        order = self.state.orders.get(request.path_params["id"])
        if order is None:
            return JSONResponse({"error": "ResourceNotFound", "detail": "Not found"}, 404)
        if order["status"] != "draft":
            return JSONResponse({"error": "OrderNotDraft", "detail": "The order is not a draft"}, 412)
        if self.state.decline_charges or order["customer"].get("card") != GOOD_CARD:
            return JSONResponse({"error": "PaymentFailed", "detail": "Your card was declined."}, 402)
        order["status"] = "paid"
        data = self._order_json(order)
        self.send("order.paid", data)
        await self._answered("finalize")
        return JSONResponse(data)

    async def list_orders(self, request: Request) -> Response:
        """Polar's GET /v1/orders/: filtered by customer (id or external id), product and status,
        newest first, a page of `limit` (at most 100)."""
        if (refused := await self._api(request)) is not None:
            return refused
        query = request.query_params
        externals, customers = query.getlist("external_customer_id"), query.getlist("customer_id")
        products, statuses = query.getlist("product_id"), query.getlist("status")
        # Polar's metadata filter (deepObject: ?metadata[key]=value), on the values' text.
        metadata = {k[len("metadata["):-1]: v for k, v in query.items()
                    if k.startswith("metadata[") and k.endswith("]")}
        try:
            page, limit = int(query.get("page", "1")), int(query.get("limit", "10"))
        except ValueError:
            return _invalid("page", "an integer")
        if page < 1 or not 1 <= limit <= 100:
            return _invalid("limit", "page at least 1, limit 1 to 100")
        found = [o for o in self.state.orders.values()
                 if (not externals or o["customer"]["external_id"] in externals)
                 and (not customers or o["customer"]["id"] in customers)
                 and (not products or self.credit_product_id in products)
                 and (not statuses or o["status"] in statuses)
                 and all(str(o["metadata"].get(k)) == v for k, v in metadata.items())]
        found.sort(key=lambda o: o["created_at"], reverse=True)
        items = [self._order_json(o) for o in found[(page - 1) * limit:page * limit]]
        return JSONResponse({"items": items, "pagination": {"total_count": len(found),
                                                            "max_page": max(1, -(-len(found) // limit))}})

    def _order_json(self, order: dict[str, Any]) -> dict[str, Any]:
        customer = order["customer"]
        discount = min(int(order.get("discount") or 0), order["amount"])
        paid = order["amount"] - discount
        return shape(outputs.Order, id=order["id"], status=order["status"], paid=order["status"] == "paid",
                     billing_reason=order["billing_reason"], customer_id=customer["id"],
                     product_id=self.credit_product_id, metadata=order["metadata"], total_amount=paid,
                     subtotal_amount=order["amount"], discount_amount=discount, net_amount=paid, currency="usd",
                     created_at=order.get("created_at") or _iso(datetime.now(UTC)),
                     customer=self._customer_json(customer, outputs.OrderCustomer))

    # --- what the provider does ---

    def _customer(self, external_id: str, email: str | None) -> dict[str, Any]:
        return self.state.customers.setdefault(external_id, {
            "id": _id("cus"), "external_id": external_id, "email": email or f"{external_id}@example.com",
            "created_at": _iso(datetime.now(UTC))})

    def buy(self, checkout: dict[str, Any], email: str | None, card: str) -> dict[str, Any]:
        """A paid checkout for a one-time product: the card kept as the customer's payment method,
        and order.paid."""
        customer = self._customer(str(checkout["external_customer_id"]), email)
        customer["card"] = card
        order: dict[str, Any] = {"id": _id("ord"), "status": "paid", "customer": customer,
                                 "amount": checkout["amount"], "metadata": dict(checkout["metadata"]),
                                 "billing_reason": "purchase", "discount": self.state.discount_cents,
                                 "created_at": _iso(datetime.now(UTC))}
        self.state.orders[order["id"]] = order
        self.send("order.paid", self._order_json(order))
        return order

    def _set_cancel(self, sub: dict[str, Any], cancel: bool) -> None:
        if sub["status"] not in ("active", "trialing", "past_due"):
            return
        sub["cancel_at_period_end"] = cancel
        sub["canceled_at"] = _iso(datetime.now(UTC)) if cancel else None
        self._touch(sub)
        self.send("subscription.updated", self._subscription_json(sub))
        self.send("subscription.canceled" if cancel else "subscription.uncanceled", self._subscription_json(sub))

    def _touch(self, sub: dict[str, Any]) -> None:
        now = datetime.now(UTC)
        last = datetime.fromisoformat(sub["modified_at"].replace("Z", "+00:00"))
        sub["modified_at"] = _iso(max(now, last + timedelta(microseconds=1)))

    def _customer_json(self, customer: dict[str, Any], model: Any) -> dict[str, Any]:
        return shape(model, id=customer["id"], external_id=customer["external_id"], email=customer["email"],
                     metadata={}, created_at=customer["created_at"])

    def _subscription_json(self, sub: dict[str, Any]) -> dict[str, Any]:
        customer = self.state.customers[sub["external_id"]]
        return shape(outputs.Subscription, id=sub["id"], status=sub["status"], created_at=sub["created_at"],
                     modified_at=sub["modified_at"], current_period_start=sub["period_start"],
                     current_period_end=sub["period_end"], cancel_at_period_end=sub["cancel_at_period_end"],
                     canceled_at=sub.get("canceled_at"), started_at=sub["created_at"], customer_id=customer["id"],
                     product_id=self.product_id, metadata=sub["metadata"], amount=2000, currency="usd",
                     recurring_interval="month", recurring_interval_count=1,
                     customer=self._customer_json(customer, outputs.SubscriptionCustomer))

    def subscribe(self, external_id: str, email: str | None, metadata: dict[str, Any]) -> dict[str, Any]:
        """A paid checkout: the customer (made once), an active subscription, and Polar's events."""
        now = datetime.now(UTC)
        customer = self._customer(external_id, email)
        sub: dict[str, Any] = {
            "id": _id("sub"), "external_id": external_id, "status": "active", "created_at": _iso(now),
            "modified_at": _iso(now), "period_start": _iso(now), "period_end": _iso(now + timedelta(days=30)),
            "cancel_at_period_end": False, "metadata": dict(metadata)}
        self.state.subscriptions[sub["id"]] = sub
        data = self._subscription_json(sub)
        self.send("subscription.created", data)
        self.send("subscription.active", data)
        order = shape(outputs.Order, id=_id("ord"), status="paid", paid=True, billing_reason="subscription_create",
                      subscription_id=sub["id"], customer_id=customer["id"], product_id=self.product_id,
                      metadata=dict(metadata), total_amount=2000, currency="usd", created_at=_iso(now),
                      customer=self._customer_json(customer, outputs.OrderCustomer))
        self.send("order.paid", order)
        return sub

    # --- webhooks ---

    def send(self, event_type: str, data: dict[str, Any]) -> Delivery:
        payload = json.dumps({"type": event_type, "timestamp": _iso(datetime.now(UTC)), "api_version": "2026-10",
                              "data": data})
        delivery = Delivery(webhook_id=_id("msg"), type=event_type, body=payload)
        self.state.deliveries[delivery.webhook_id] = delivery
        if self.state.lose_next > 0:
            self.state.lose_next -= 1
            delivery.status = 0  # lost: never sent
        elif self.state.holding:
            self.state.held.append(delivery)
        else:
            self._spawn(delivery)
        return delivery

    def _spawn(self, delivery: Delivery) -> None:
        task = asyncio.create_task(self._deliver(delivery))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _deliver(self, delivery: Delivery, *, retry: bool = True) -> int:
        """POST it to svc, signed now, again on anything but 2xx (a few times, backing off)."""
        for pause in (*RETRIES, None) if retry else (None,):
            delivery.attempts += 1
            now = datetime.now(UTC)
            headers = {"webhook-id": delivery.webhook_id, "webhook-timestamp": str(int(now.timestamp())),
                       "webhook-signature": self.webhook.sign(delivery.webhook_id, now, delivery.body),
                       "content-type": "application/json"}
            try:
                answer = await self._http.post(self.hook_url, content=delivery.body, headers=headers)
                delivery.status = answer.status_code
            except httpx.HTTPError:
                delivery.status = 0
            if 200 <= (delivery.status or 0) < 300 or pause is None:
                return delivery.status or 0
            await asyncio.sleep(pause)
        return delivery.status or 0

    async def drain(self) -> None:
        """Until every delivery under way is done (its retries included)."""
        while self._sending:
            await asyncio.gather(*list(self._sending), return_exceptions=True)

    # --- pages ---

    async def checkout_page(self, request: Request) -> Response:
        checkout = self.state.checkouts.get(request.path_params["id"])
        if checkout is None:
            return HTMLResponse("<h1>No such checkout</h1>", 404)
        who = html.escape(str(checkout["external_customer_id"]))
        credit = checkout["product"] == self.credit_product_id
        cents = int(checkout["amount"])
        price = f"${cents // 100:,}" if cents % 100 == 0 else f"${cents / 100:,.2f}"
        title, what = (("Buy AI credit", f"<p>{price} of AI credit, for <strong>{who}</strong>.</p>") if credit
                       else ("Subscribe to svc Pro", f"<p>svc Pro: $20 a month, for <strong>{who}</strong>.</p>"))
        return HTMLResponse(_page(title, f"""
{what}
<form method="post">
  <label>Email <input name="email" type="email" value="{html.escape(checkout.get("email") or "")}"></label>
  <label>Card number <input name="card" inputmode="numeric" autocomplete="cc-number"></label>
  <button type="submit">Pay {price}</button>
</form>
<p><small>Test cards: 4242 4242 4242 4242 pays, 4000 0000 0000 0002 is declined.</small></p>"""))

    async def pay(self, request: Request) -> Response:
        checkout = self.state.checkouts.get(request.path_params["id"])
        if checkout is None:
            return HTMLResponse("<h1>No such checkout</h1>", 404)
        form = await request.form()
        card = "".join(str(form.get("card", "")).split())
        if card != GOOD_CARD or self._checkout_json(checkout)["status"] != "open":
            said = "Your card was declined." if card == DECLINED_CARD else "That card number is not a test card."
            if checkout["status"] != "open":
                said = "This checkout is already paid."
            elif card == GOOD_CARD:
                said = "This checkout has expired."
            return HTMLResponse(_page("Payment failed", f'<p role="alert">{said}</p>'
                                      f'<p><a href="/checkout/{request.path_params["id"]}">Try again</a></p>'), 402)
        checkout["status"] = "succeeded"
        email = str(form.get("email") or "") or None
        if checkout["product"] == self.credit_product_id:
            self.buy(checkout, email, card)
        else:
            sub = self.subscribe(str(checkout["external_customer_id"]), email, checkout["metadata"])
            checkout["subscription_id"] = sub["id"]
        target = checkout["success_url"] or "/"
        return RedirectResponse(target.replace("{CHECKOUT_ID}", request.path_params["id"]), 303)

    async def portal_page(self, request: Request) -> Response:
        external = self.state.sessions.get(request.query_params.get("token", ""))
        if external is None:
            return HTMLResponse(_page("Session expired", "<p>Open the portal again from svc.</p>"), 401)
        rows = []
        for sub in self.state.subscriptions.values():
            if sub["external_id"] != external:
                continue
            action = "resume" if sub["cancel_at_period_end"] else "cancel"
            label = "Resume the subscription" if action == "resume" else "Cancel at the end of the period"
            token = html.escape(request.query_params["token"])
            rows.append(f'<li>svc Pro: {sub["status"]}, period ends {sub["period_end"][:10]}'
                        f'{" (canceled at the end of the period)" if sub["cancel_at_period_end"] else ""}'
                        f'<form method="post"><input type="hidden" name="token" value="{token}">'
                        f'<input type="hidden" name="subscription" value="{sub["id"]}">'
                        f'<button name="action" value="{action}">{label}</button></form></li>')
        return HTMLResponse(_page("Your subscription", f"<ul>{''.join(rows)}</ul>"))

    async def portal_action(self, request: Request) -> Response:
        form = await request.form()
        token = str(form.get("token", ""))
        external = self.state.sessions.get(token)
        sub = self.state.subscriptions.get(str(form.get("subscription", "")))
        if external is None or sub is None or sub["external_id"] != external:
            return HTMLResponse(_page("Session expired", "<p>Open the portal again from svc.</p>"), 401)
        self._set_cancel(sub, form.get("action") == "cancel")
        return RedirectResponse(f"/portal?token={token}", 303)

    # --- for the tests ---

    async def control(self, request: Request) -> Response:
        action = request.path_params["action"]
        body = await request.json() if await request.body() else {}
        if action == "hold":
            self.state.holding = True
        elif action == "release":
            held, self.state.held, self.state.holding = self.state.held, [], False
            for delivery in reversed(held) if body.get("reverse") else held:
                await self._deliver(delivery, retry=False)
        elif action == "lose-next":
            self.state.lose_next += int(body.get("count", 1))
        elif action == "redeliver":
            delivery = self.state.deliveries[body["webhookId"]]
            return JSONResponse({"status": await self._deliver(delivery, retry=False)})
        elif action == "api":
            self.state.api_mode = body["mode"]
        elif action == "withhold":
            self.withhold(str(body["step"]))
        elif action == "answer":
            self.answer()
        elif action == "decline-charges":
            self.state.decline_charges = bool(body.get("decline", True))
        elif action == "expire-checkout":  # its hour is over
            self.state.checkouts[body["checkout"]]["expires_at"] = _iso(datetime.now(UTC))
        elif action == "discount":  # the next one-time orders paid with a discount of `cents`
            self.state.discount_cents = int(body.get("cents", 0))
        elif action == "set-status":  # the provider's state moves; svc is told only with "notify"
            sub = self.state.subscriptions[body["subscription"]]
            sub["status"] = body["status"]
            self._touch(sub)
            if body.get("notify"):
                self.send("subscription.updated", self._subscription_json(sub))
        else:
            return JSONResponse({"detail": f"no such action {action}"}, 404)
        return JSONResponse({"ok": True})

    async def control_mode(self, mode: str) -> None:
        """The API answers (ok), fails (error) or hangs (hang): what a test asks of the provider."""
        self.state.api_mode = mode

    async def list_checkouts(self, request: Request) -> Response:
        return JSONResponse({"checkouts": [
            {"id": checkout_id, "url": f"{self.url}/checkout/{checkout_id}", "status": c["status"],
             "amount": c["amount"], "credit": c["product"] == self.credit_product_id}
            for checkout_id, c in self.state.checkouts.items()]})

    async def list_deliveries(self, request: Request) -> Response:
        return JSONResponse({"deliveries": [
            {"webhookId": d.webhook_id, "type": d.type, "attempts": d.attempts, "status": d.status,
             "orgSlug": json.loads(d.body)["data"].get("metadata", {}).get("orgSlug")}
            for d in self.state.deliveries.values()]})


def _invalid(field_name: str, message: str) -> Response:
    """Polar's 422: a validation error naming the field."""
    return JSONResponse({"detail": [{"loc": ["body", field_name], "msg": message, "type": "value_error"}]}, 422)


def _page(title: str, body: str) -> str:
    return (f'<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width"><title>{html.escape(title)} (fake Polar)</title>'
            f'<style>body{{font:16px system-ui;max-width:32rem;margin:2rem auto;padding:0 1rem}}'
            f'label{{display:block;margin:.5rem 0}}</style><main><h1>{html.escape(title)}</h1>{body}</main></html>')
