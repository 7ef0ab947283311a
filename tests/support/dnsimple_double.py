"""A small stateful test double of DNSimple's API v2, answering with the shapes of DNSimple's docs and
fixtures (docs/notes/registrar-apis.md): the `data` envelope, `{"message", "errors"}` refusals, the
X-RateLimit-* headers, 201/202/204 where the docs say so. It is served as an httpx.MockTransport
(`transport()`) or as an ASGI app (`app`, for httpx.ASGITransport or a real server).

Where DNSimple's words are not documented (a name somebody else holds, a premium price missing, a
pending registration registered twice) the double says something plausible; the adapter never
depends on those words. Documented words are used verbatim: "TLD .PINEAPPLE is not supported", the
card_declined payment refusal, the too-early renewal, "quota exceeded", "Authentication failed".

Control, for the tests and the shared registrar contract suite (tests/registrar/conftest.py):
- `decline_next(reason=None)`: the next registration or renewal meets a declined card (`reason`:
  the payment gateway's error code in DNSimple's words, instead of card_declined);
- `take(name)`: somebody else registers the name; `take_next()`: somebody else registers the name
  of the next registration just before it arrives;
- `transfer_away(name)`: the domain leaves the account;
- `fail_next(status, body=None, request=None)`: the next request answers that status (with `body`,
  that raw text instead of DNSimple's JSON); with `request`, a regular expression matched against
  "METHOD path" (the path after /v2/{account}/, e.g. r"POST registrar/domains/[^/]+/registrations"),
  the next request that matches;
- `hold_next(request=None, done=False)`: the next (matching) request is held until `release()`:
  before anything is done (answered 503 when let go), or with done=True after the work is done (the
  answer is lost to a client that gave up). The transport honours the client's read timeout the way
  a network transport does (MockTransport alone ignores it), so a held request times out;
- `pend_next(polls)`: the next registration or renewal answers 202, and completes after that many
  more requests about its domain;
- `set_price(...)`, `make_premium(...)`, `expire(name, at)`, `add_domain(...)`; `price(name)` reads.
What happened: `charges` (the money DNSimple took), `registrations`, `renewals`, `contacts`,
`auth_emails`, `requests`.

Registry rules it keeps as DNSimple relays them: a contact's country is two upper-case letters (the
documented ISO 3166-1 alpha-2), and a delegation names 2 to 13 nameservers (400, as documented for
nameservers that "cannot be changed")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

TOKEN = "dnsimple-test-token"
ACCOUNT = "1010"
DNSIMPLE_NS = ["ns1.dnsimple.com", "ns2.dnsimple.com", "ns3.dnsimple.com", "ns4.dnsimple.com"]
PRICES = {"com": Decimal("14.00"), "net": Decimal("16.00"), "org": Decimal("12.50"), "dev": Decimal("15.00"),
          "io": Decimal("39.00"), "test": Decimal("10.00")}
CARD_DECLINED = ("We were unable to authorize the payment for this purchase on your card. Payment gateway returned "
                 "error code: card_declined (generic_decline).")
INVOICES = ("This action cannot be completed because you have purchase invoices that need to be paid for: "
            "12345-1010. Please retry the payment following these instructions "
            "https://support.dnsimple.com/articles/account-invoice-history/#retrying.")
FAILURES = {401: "Authentication failed", 402: INVOICES, 404: "Not Found", 429: "quota exceeded"}
CONTACT_REQUIRED = ("first_name", "last_name", "address1", "city", "state_province", "postal_code", "country",
                    "email", "phone")
HOLD_SECONDS = 60.0  # a held request is let go after this at the latest (release() ends it sooner)

Answer = tuple[int, Any, dict[str, str]]


@dataclass(frozen=True)
class _Trap:
    """What the next request matching `request` meets instead of the API: a status (and raw body),
    or a hold before or after the work."""

    request: str | None
    status: int | None = None
    body: str | None = None
    hold: str | None = None  # "before" | "after"

    def matches(self, method: str, rest: str) -> bool:
        return self.request is None or re.fullmatch(self.request, f"{method} {rest}") is not None


def _stamp(t: datetime | None) -> str | None:
    return None if t is None else t.strftime("%Y-%m-%dT%H:%M:%SZ")


class DnsimpleDouble:
    def __init__(self, *, token: str = TOKEN, account_id: str = ACCOUNT,
                 now: Callable[[], datetime] | None = None) -> None:
        self.token = token
        self.account_id = account_id
        self._now = now or (lambda: datetime.now(UTC).replace(microsecond=0))
        self.domains: dict[str, dict[str, Any]] = {}
        self.contacts: dict[int, dict[str, Any]] = {}
        self.registrations: list[dict[str, Any]] = []
        self.renewals: list[dict[str, Any]] = []
        self.charges: list[dict[str, Any]] = []
        self.auth_emails: list[str] = []
        self.requests: list[tuple[str, str]] = []
        self.taken: set[str] = set()
        self.prices: dict[str, tuple[Decimal, Decimal]] = {}  # name or tld -> (registration, renewal)
        self.premium: set[str] = set()
        self._ids = 100
        self._decline: str | None = None  # the refusal's words, while a decline is queued
        self._take_next = False
        self._pend: int | None = None
        self._traps: list[_Trap] = []
        self._release = asyncio.Event()
        self._remaining = 2400
        self.app = Starlette(routes=[Route("/{path:path}", self._asgi, methods=["GET", "POST", "PUT", "DELETE"])])

    # --- control ---

    def decline_next(self, reason: str | None = None) -> None:
        self._decline = CARD_DECLINED if reason is None else CARD_DECLINED.replace(
            "card_declined (generic_decline)", reason)

    def take(self, name: str) -> None:
        self.taken.add(name.lower())

    def take_next(self) -> None:
        """Somebody else registers the next registration's name just before it arrives."""
        self._take_next = True

    def transfer_away(self, name: str) -> None:
        self.domains.pop(name.lower(), None)
        self.taken.add(name.lower())

    def fail_next(self, status: int, body: str | None = None, request: str | None = None) -> None:
        self._traps.append(_Trap(request, status=status, body=body))

    def hold_next(self, request: str | None = None, *, done: bool = False) -> None:
        self._traps.append(_Trap(request, hold="after" if done else "before"))

    def unspent(self) -> list[str]:
        """What a test queued that no request has met yet (traps, a decline, a take)."""
        queued = [f"{f'hold {t.hold}' if t.hold else t.status} on {t.request or 'any request'}" for t in self._traps]
        flags = {"decline": self._decline is not None, "take": self._take_next, "pend": self._pend is not None}
        return queued + [flag for flag, on in flags.items() if on]

    def release(self) -> None:
        """Let go of the requests held (those to come are held again)."""
        self._release.set()
        self._release = asyncio.Event()

    def expire(self, name: str, expires_at: datetime) -> None:
        """The registry's expiry moved (the registrar is the source of truth for it)."""
        domain = self.domains[name.lower()]
        domain["expires"] = expires_at
        domain["state"] = "expired" if expires_at < self._now() else "registered"

    def pend_next(self, polls: int = 1) -> None:
        self._pend = polls

    def set_price(self, name_or_tld: str, registration: str, renewal: str | None = None) -> None:
        self.prices[name_or_tld.lower()] = (Decimal(registration), Decimal(renewal or registration))

    def make_premium(self, name: str, price: str, renewal: str | None = None) -> None:
        self.premium.add(name.lower())
        self.set_price(name, price, renewal)

    def price(self, name: str) -> tuple[Decimal, Decimal] | None:
        """The name's (registration, renewal) price in dollars; None when its TLD is not sold."""
        return self._price(name.lower())

    def add_domain(self, name: str, *, state: str = "registered", registrant_id: int | None = None,
                   years: int = 1) -> dict[str, Any]:
        """A domain already in the account (registered outside these tests, or a hosted zone)."""
        now = self._now()
        domain = {"id": self._id(), "account_id": int(self.account_id), "registrant_id": registrant_id,
                  "name": name, "unicode_name": name, "state": state, "auto_renew": False, "private_whois": False,
                  "expires": now + timedelta(days=365 * years) if state != "hosted" else None, "locked": True,
                  "nameservers": list(DNSIMPLE_NS), "created_at": now, "updated_at": now}
        self.domains[name] = domain
        return domain

    # --- transports ---

    def transport(self) -> httpx.MockTransport:
        async def handler(request: httpx.Request) -> httpx.Response:
            status, body, headers = await self.answer(request.method, request.url.path, request.headers,
                                                      request.content, dict(request.url.params))
            return httpx.Response(status, content=_encode(body), headers=headers)

        return _TimedTransport(handler)

    async def _asgi(self, request: Request) -> Response:
        status, body, headers = await self.answer(request.method, request.url.path, request.headers,
                                                  await request.body(), dict(request.query_params))
        return Response(_encode(body), status_code=status, headers=headers)

    # --- the API ---

    async def answer(self, method: str, path: str, headers: Any, body: bytes,
                     query: dict[str, str] | None = None) -> Answer:
        self.requests.append((method, path))
        self._remaining = max(0, self._remaining - 1)
        prefix = f"/v2/{self.account_id}/"
        trap = self._sprung(method, path[len(prefix):] if path.startswith(prefix) else path)
        payload: Any
        if trap is not None and trap.hold == "before":
            await self._hold()
            status, payload, extra = 503, {"message": "Service Unavailable"}, {}  # let go; nothing was done
        elif trap is not None and trap.status is not None:
            status = trap.status
            extra = {"X-RateLimit-Remaining": "0"} if status == 429 else {}
            payload = trap.body if trap.body is not None else {"message": FAILURES.get(status, "Server Error")}
        else:
            status, payload, extra = self._route(method, path, headers, body, query or {})
            if trap is not None:  # held after the work: done, the answer lost to a client that gave up
                await self._hold()
        reset = int((self._now() + timedelta(hours=1)).timestamp())
        out = {"X-RateLimit-Limit": "2400", "X-RateLimit-Remaining": str(self._remaining),
               "X-RateLimit-Reset": str(reset), **extra}
        if status != 204 and not isinstance(payload, str):
            out["Content-Type"] = "application/json; charset=utf-8"
        return status, payload, out

    def _sprung(self, method: str, rest: str) -> _Trap | None:
        """The first trap queued for this request, taken off the queue."""
        for index, trap in enumerate(self._traps):
            if trap.matches(method, rest):
                return self._traps.pop(index)
        return None

    async def _hold(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._release.wait(), HOLD_SECONDS)

    def _route(self, method: str, path: str, headers: Any, raw: bytes, query: dict[str, str]) -> Answer:
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401, {"message": "Authentication failed"}, {}
        try:
            body = json.loads(raw, parse_float=Decimal) if raw else None
        except ValueError:
            return 400, {"message": "Invalid JSON body"}, {}
        if path == "/v2/whoami" and method == "GET":
            return 200, {"data": {"user": None, "account": {"id": int(self.account_id)}}}, {}
        if path == "/v2/tlds" and method == "GET":
            return self._tlds(query)
        prefix = f"/v2/{self.account_id}/"
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}, {}
        rest = path[len(prefix):]
        if rest == "contacts" and method == "POST":
            return self._create_contact(body)
        if m := re.fullmatch(r"contacts/(\d+)", rest):
            contact = self.contacts.get(int(m[1]))
            return (200, {"data": contact}, {}) if contact else (404, {"message": "Contact not found"}, {})
        if m := re.fullmatch(r"domains/([^/]+)/ds_records(?:/(\d+))?", rest):
            return self._ds_records(method, m[1], int(m[2]) if m[2] else None, body)
        if m := re.fullmatch(r"domains/([^/]+)", rest):
            self._advance(m[1])
            domain = self.domains.get(m[1])
            if domain is None:
                return 404, {"message": f"Domain `{m[1]}` not found"}, {}
            return 200, {"data": self._domain(domain)}, {}
        m = re.fullmatch(r"registrar/domains/([^/]+)/([a-z_]+)(?:/(\d+))?", rest)
        if m is None:
            return 404, {"message": "Not Found"}, {}
        name, what, ident = m[1], m[2], m[3]
        self._advance(name)
        handler = getattr(self, f"_{what}_{method.lower()}", None)
        if handler is None:
            return 404, {"message": "Not Found"}, {}
        result: Answer = handler(name, body, int(ident) if ident else None)
        return result

    # --- contacts and domains ---

    def _create_contact(self, body: Any) -> Answer:
        body = body if isinstance(body, dict) else {}
        errors: dict[str, list[str]] = {}
        for field in CONTACT_REQUIRED:
            if not str(body.get(field) or "").strip():
                errors.setdefault(field, []).append("can't be blank")
        if body.get("email") and "@" not in str(body["email"]):
            errors.setdefault("email", []).append("is an invalid email address")
        if body.get("phone") and not re.fullmatch(r"\+\d{1,3}\.?\d{4,14}", str(body["phone"])):
            errors.setdefault("phone", []).append("is probably not a phone number")
        if body.get("country") and not re.fullmatch(r"[A-Z]{2}", str(body["country"])):
            errors.setdefault("country", []).append("is not a valid ISO 3166-1 alpha-2 country code")
        if errors:
            return 400, {"message": "Validation failed", "errors": errors}, {}
        now = _stamp(self._now())
        contact = {"id": self._id(), "account_id": int(self.account_id), "label": body.get("label"),
                   "first_name": body["first_name"], "last_name": body["last_name"],
                   "organization_name": None, "job_title": None, "address1": body["address1"], "address2": None,
                   "city": body["city"], "state_province": body["state_province"],
                   "postal_code": body["postal_code"], "country": body["country"], "email": body["email"],
                   "phone": body["phone"], "fax": None, "created_at": now, "updated_at": now}
        self.contacts[contact["id"]] = contact
        return 201, {"data": contact}, {}

    def _domain(self, d: dict[str, Any]) -> dict[str, Any]:
        expires = d["expires"]
        return {"id": d["id"], "account_id": d["account_id"], "registrant_id": d["registrant_id"], "name": d["name"],
                "unicode_name": d["unicode_name"], "state": d["state"], "auto_renew": d["auto_renew"],
                "private_whois": d["private_whois"], "expires_on": expires.date().isoformat() if expires else None,
                "expires_at": _stamp(expires), "created_at": _stamp(d["created_at"]),
                "updated_at": _stamp(d["updated_at"])}

    def _held(self, name: str) -> dict[str, Any] | None:
        domain = self.domains.get(name)
        return domain if domain is not None and domain["state"] in ("registered", "expired") else None

    def _price(self, name: str) -> tuple[Decimal, Decimal] | None:
        tld = name.rsplit(".", 1)[-1]
        return self.prices.get(name) or self.prices.get(tld) or ((PRICES[tld],) * 2 if tld in PRICES else None)

    # --- TLDs and DS records ---

    def _tlds(self, query: dict[str, str]) -> Answer:
        """The TLD list, paginated as DNSimple's listTlds fixture (per_page 30 unless asked, 100 at most)."""
        names = sorted({*PRICES, *(k for k in self.prices if "." not in k)})
        page, per_page = max(int(query.get("page", "1")), 1), min(max(int(query.get("per_page", "30")), 1), 100)
        rows = [{"tld": tld, "tld_type": 1, "whois_privacy": True, "auto_renew_only": False, "idn": False,
                 "minimum_registration": 1, "registration_enabled": True, "renewal_enabled": True,
                 "transfer_enabled": True, "dnssec_interface_type": "ds"} for tld in names]
        pages = max((len(rows) + per_page - 1) // per_page, 1)
        return 200, {"data": rows[(page - 1) * per_page:page * per_page],
                     "pagination": {"current_page": page, "per_page": per_page, "total_entries": len(rows),
                                    "total_pages": pages}}, {}

    def _ds_records(self, method: str, name: str, ident: int | None, body: Any) -> Answer:
        domain = self.domains.get(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        held: list[dict[str, Any]] = domain.setdefault("ds_records", [])
        if ident is None and method == "GET":
            return 200, {"data": list(held), "pagination": {"current_page": 1, "per_page": 30,
                                                            "total_entries": len(held), "total_pages": 1}}, {}
        if ident is None and method == "POST":
            body = body if isinstance(body, dict) else {}
            errors = {key: ["can't be blank"] for key in ("algorithm", "digest", "digest_type", "keytag")
                      if not str(body.get(key) or "").strip()}
            if errors:
                return 400, {"message": "Validation failed", "errors": errors}, {}
            now = _stamp(self._now())
            record = {"id": self._id(), "domain_id": domain["id"], "algorithm": str(body["algorithm"]),
                      "digest": str(body["digest"]), "digest_type": str(body["digest_type"]),
                      "keytag": str(body["keytag"]), "created_at": now, "updated_at": now}
            held.append(record)
            return 201, {"data": record}, {}
        found = next((r for r in held if r["id"] == ident), None)
        if found is None:
            return 404, {"message": "Delegation signer record `0` not found"}, {}
        if method == "DELETE":
            held.remove(found)
            return 204, None, {}
        return 200, {"data": found}, {}

    def ds(self, name: str) -> list[str]:
        """The DS records held for a domain, as zone-file text."""
        return [f"{r['keytag']} {r['algorithm']} {r['digest_type']} {r['digest'].upper()}"
                for r in self.domains.get(name, {}).get("ds_records", [])]

    # --- check and prices ---

    def _unsupported(self, name: str) -> Answer:
        return 400, {"message": f"TLD .{name.rsplit('.', 1)[-1].upper()} is not supported"}, {}

    def _check_get(self, name: str, body: Any, ident: int | None) -> Answer:
        if self._price(name) is None:
            return self._unsupported(name)
        available = name not in self.taken and not self._blocked(name)
        return 200, {"data": {"domain": name, "available": available, "premium": name in self.premium}}, {}

    def _prices_get(self, name: str, body: Any, ident: int | None) -> Answer:
        price = self._price(name)
        if price is None:
            return self._unsupported(name)
        return 200, {"data": {"domain": name, "premium": name in self.premium, "trustee_service": False,
                              "registration_price": price[0], "renewal_price": price[1], "transfer_price": price[1],
                              "restore_price": price[1] * 4, "trustee_service_price": Decimal("0.0")}}, {}

    # --- registrations ---

    def _registrations_post(self, name: str, body: Any, ident: int | None) -> Answer:
        price = self._price(name)
        if price is None:
            return self._unsupported(name)
        if self._take_next:
            self._take_next = False
            self.taken.add(name)
        body = body if isinstance(body, dict) else {}
        registrant = body.get("registrant_id")
        if not isinstance(registrant, int) or registrant not in self.contacts:
            return 400, {"message": "Validation failed", "errors": {"registrant_id": ["can't be blank"]}}, {}
        if name in self.taken or self._blocked(name):
            return 400, {"message": f"The domain {name} is not available for registration", "errors": {}}, {}
        if name in self.premium and body.get("premium_price") != f"{price[0]:.2f}":
            return 400, {"message": f"{name} is a premium domain: confirm its price with premium_price"}, {}
        if self._decline is not None:
            refusal, self._decline = self._decline, None
            return 400, {"message": refusal, "errors": {}}, {}
        pend, self._pend = self._pend, None
        domain = self.add_domain(name, state="hosted" if pend else "registered", registrant_id=registrant)
        domain["auto_renew"] = body.get("auto_renew") is True
        domain["private_whois"] = body.get("whois_privacy") is True
        now = _stamp(self._now())
        registration = {"id": self._id(), "domain_id": domain["id"], "registrant_id": registrant, "period": 1,
                        "state": "new" if pend else "registered", "auto_renew": domain["auto_renew"],
                        "whois_privacy": domain["private_whois"], "created_at": now, "updated_at": now}
        self.registrations.append({**registration, "name": name, "polls_left": pend or 0})
        if not pend:
            self._charge(name, "domain-registration", price[0])
        return (202 if pend else 201), {"data": registration}, {}

    def _registrations_get(self, name: str, body: Any, ident: int | None) -> Answer:
        made = next((r for r in self.registrations if r["id"] == ident and r["name"] == name), None)
        if made is None:
            return 404, {"message": "Domain registration not found"}, {}
        return 200, {"data": {k: v for k, v in made.items() if k not in ("name", "polls_left")}}, {}

    def _blocked(self, name: str) -> bool:
        """Held in the account, or being registered: not for sale (a hosted zone alone still is)."""
        pending = any(r["name"] == name and r["state"] in ("new", "registering") for r in self.registrations)
        return pending or self._held(name) is not None

    def _advance(self, name: str) -> None:
        """A pending registration or renewal moves on with every request about its domain."""
        for made in self.registrations:
            if made["name"] == name and made["state"] in ("new", "registering"):
                made["polls_left"] -= 1
                made["state"] = "registering"
                if made["polls_left"] <= 0 and name in self.domains:
                    made["state"] = "registered"
                    domain = self.domains[name]
                    domain["state"] = "registered"
                    domain["expires"] = self._now() + timedelta(days=365)
                    self._charge(name, "domain-registration", (self._price(name) or (Decimal(0),))[0])
        for made in self.renewals:
            if made["name"] == name and made["state"] in ("new", "renewing"):
                made["polls_left"] -= 1
                made["state"] = "renewing"
                if made["polls_left"] <= 0:
                    made["state"] = "renewed"
                    self._renew(name, made["period"])

    # --- renewals ---

    def _renewals_post(self, name: str, body: Any, ident: int | None) -> Answer:
        domain = self._held(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        period = body.get("period") if isinstance(body, dict) else None
        if not isinstance(period, int) or not 1 <= period <= 9:
            return 400, {"message": "Validation failed", "errors": {"period": ["is not a valid period"]}}, {}
        if domain["expires"] + timedelta(days=365 * period) > self._now() + timedelta(days=365 * 10 + 3):
            return 400, {"message": f"{name} may not be renewed at this time", "errors": {}}, {}
        if self._decline is not None:
            refusal, self._decline = self._decline, None
            return 400, {"message": refusal, "errors": {}}, {}
        pend, self._pend = self._pend, None
        now = _stamp(self._now())
        renewal = {"id": self._id(), "domain_id": domain["id"], "period": period,
                   "state": "new" if pend else "renewed", "created_at": now, "updated_at": now}
        self.renewals.append({**renewal, "name": name, "polls_left": pend or 0})
        if not pend:
            self._renew(name, period)
        return (202 if pend else 201), {"data": renewal}, {}

    def _renewals_get(self, name: str, body: Any, ident: int | None) -> Answer:
        made = next((r for r in self.renewals if r["id"] == ident and r["name"] == name), None)
        if made is None:
            return 404, {"message": "Domain renewal not found"}, {}
        return 200, {"data": {k: v for k, v in made.items() if k not in ("name", "polls_left")}}, {}

    def _renew(self, name: str, period: int) -> None:
        domain = self.domains[name]
        domain["expires"] += timedelta(days=365 * period)
        domain["state"] = "registered"
        self._charge(name, "domain-renewal", (self._price(name) or (Decimal(0), Decimal(0)))[1] * period)

    # --- delegation, lock, auto-renewal, transfer out ---

    def _delegation_get(self, name: str, body: Any, ident: int | None) -> Answer:
        domain = self._held(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        return 200, {"data": domain["nameservers"]}, {}

    def _delegation_put(self, name: str, body: Any, ident: int | None) -> Answer:
        domain = self._held(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        if not isinstance(body, list) or not body or not all(isinstance(n, str) and n for n in body):
            return 400, {"message": "Validation failed", "errors": {"name_servers": ["are invalid"]}}, {}
        if not 2 <= len(body) <= 13:
            return 400, {"message": f"The nameservers of {name} cannot be changed: the registry requires from 2 "
                                    f"to 13 nameservers", "errors": {}}, {}
        domain["nameservers"] = list(body)
        return 200, {"data": domain["nameservers"]}, {}

    def _transfer_lock_get(self, name: str, body: Any, ident: int | None) -> Answer:
        domain = self._held(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        return 200, {"data": {"enabled": domain["locked"]}}, {}

    def _transfer_lock_post(self, name: str, body: Any, ident: int | None) -> Answer:
        domain = self._held(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        domain["locked"] = True
        return 201, {"data": {"enabled": True}}, {}

    def _transfer_lock_delete(self, name: str, body: Any, ident: int | None) -> Answer:
        domain = self._held(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        domain["locked"] = False
        return 200, {"data": {"enabled": False}}, {}

    def _auto_renewal(self, name: str, enabled: bool) -> Answer:
        domain = self._held(name)
        if domain is None:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        domain["auto_renew"] = enabled
        return 204, None, {}

    def _auto_renewal_put(self, name: str, body: Any, ident: int | None) -> Answer:
        return self._auto_renewal(name, True)

    def _auto_renewal_delete(self, name: str, body: Any, ident: int | None) -> Answer:
        return self._auto_renewal(name, False)

    def _authorize_transfer_out_post(self, name: str, body: Any, ident: int | None) -> Answer:
        if name not in self.domains:
            return 404, {"message": f"Domain `{name}` not found"}, {}
        domain = self._held(name)
        if domain is None:  # a hosted zone: nothing to transfer
            return 400, {"message": f"{name} cannot be transferred out", "errors": {}}, {}
        domain["locked"] = False
        self.auth_emails.append(name)
        return 204, None, {}

    # --- bookkeeping ---

    def _charge(self, name: str, product: str, amount: Decimal) -> None:
        self.charges.append({"domain": name, "product_type": product, "amount": amount})

    def _id(self) -> int:
        self._ids += 1
        return self._ids


class _TimedTransport(httpx.MockTransport):
    """MockTransport with the client's read timeout, as a network transport has it: a request the
    double holds longer is an httpx.ReadTimeout (MockTransport alone would wait for ever)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout")
        read = timeouts.get("read") if isinstance(timeouts, dict) else None
        try:
            async with asyncio.timeout(read):
                return await super().handle_async_request(request)
        except TimeoutError:
            raise httpx.ReadTimeout("the DNSimple double held its answer", request=request) from None


def _encode(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, default=lambda d: float(d) if isinstance(d, Decimal) else str(d)).encode()
