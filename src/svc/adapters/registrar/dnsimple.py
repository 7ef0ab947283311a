"""The registrar port (port.py) on DNSimple's API v2 (developer.dnsimple.com/v2; the request and
response shapes are in docs/notes/registrar-apis.md). One httpx client, `Authorization: Bearer`,
JSON both ways, every path under `/v2/{account}/`; production (api.dnsimple.com) or the sandbox
(api.sandbox.dnsimple.com), or `base_url` for another server speaking the same API.

How each call of the port maps onto DNSimple:

- check(names): per name, one after the other (DNSimple rate-limits its check more strictly),
  `GET registrar/domains/{name}/check`, then, if available, `GET .../prices`. Prices are JSON
  numbers in US dollars, read as Decimal (never float) and turned into cents, rounding half up. A 400
  from either (e.g. "TLD .PINEAPPLE is not supported"): not for sale (available=False, no prices).
- charge / refund: DNSimple has no separate payment. It charges the account's payment method when a
  registration succeeds, and a registration that fails costs nothing. So `charge` takes no money.
  It reads the price again, checks that `amount_cents` equals the registration price times `years`
  (otherwise RegistrarRejected "the price changed", field amountCents), and returns a reference that
  records the quote: `quote:{name}:{years}:{amount_cents}:{standard|premium}:{sha256(key)[:16]}`.
  The same key gives the same reference. `refund` of such a reference takes no money back, because
  none was taken; it only marks the reference refunded in process memory, so `register` then refuses
  it (field chargeId). The money moves in `register` instead, so a declined card shows up there as
  PaymentDeclined (400 "...card_declined..." or 402), not in `charge`.
- register: DNSimple's registration has no term parameter (its documented body is registrant_id,
  whois_privacy, auto_renew, extended_attributes, premium_price, linked_provider), so only
  years=1 is sold. `charge` refuses any other term before anything is spent (field "years").
  Steps:
  1. The port's Contact becomes a new registrant contact (`POST contacts`): `name` is split at its
     last space into first_name / last_name (a one-word name is used for both, since DNSimple
     requires both); street -> address1; city -> city and also state_province, which DNSimple
     requires and the port does not carry; postal_code, country (upper case), email; the phone is
     normalised to DNSimple's "+CC.NUMBER" form, with the country calling code found by the ITU
     prefix rule. The contact's label is a digest of the charge reference, which ties the
     registration to this charge.
  2. `POST registrar/domains/{name}/registrations` with {registrant_id, auto_renew: true,
     whois_privacy: false}, plus premium_price (the charged price, as "109.00") for a premium name.
  3. A 201 is complete. A 202, or a registration still in state new/registering, is polled at
     `GET .../registrations/{id}` a few times. If it is still pending after that, RegistrarError
     ("still pending; retry") is raised and the saga tries again later. The states failed and
     cancelled give RegistrarRejected.
  4. The Registration is then read as `domain` reads it.
  Idempotency: before it creates anything, `register` reads `GET domains/{name}`. If the account
  holds the name as registered and the registrant contact's label is this charge's, that
  registration is returned; with any other registrant, NameUnavailable (the account is shared by
  every org: "in the account" alone does not make it ours). A retry from the same process polls the
  registration it sent and reuses its contact rather than sending new ones. A 400 answer: a payment
  message -> PaymentDeclined; field errors -> RegistrarRejected; else the domain is read again:
  ours -> returned; in the account but not registered (in progress?) -> RegistrarError (retry);
  the check says unavailable -> NameUnavailable; otherwise RegistrarRejected in DNSimple's words.
- domain(name): `GET domains/{name}` (404 -> NotInAccount; a domain that is only a hosted DNS zone
  there is NotInAccount too), then `GET .../transfer_lock` and `GET .../delegation`. expires_at is
  taken from `expires_at`, or from `expires_on` at 00:00 UTC.
- set_nameservers: `PUT .../delegation` with a bare JSON array; the answer is the new list.
- set_lock: `GET .../transfer_lock`, then `POST` (lock) or `DELETE` (unlock) only when it differs.
  set_auto_renew: `PUT` / `DELETE .../auto_renewal` (204), again only when it differs.
- renew: `POST .../renewals` {"period": years} (1 to 9), then polled like a registration at
  `.../renewals/{id}`. DNSimple takes no idempotency key: a resend after a lost answer would renew,
  and charge, twice. Guards: a key with a ':'-separated ISO date part (svc's
  `{id}:renew:2027-06-05:{years}`) names the expiry the renewal starts from, and when the domain
  already expires later it is returned without renewing (this survives restarts).
  Without such a date, the adapter remembers per key, in memory, the expiry it saw and the
  renewal's id, to the same effect; such a key resent after a restart can still renew twice. An
  auto-renewal that moves the expiry in between also counts as done.
- tlds / set_ds: `GET /v2/tlds` (every page), and `domains/{name}/ds_records` listed, deleted, created
  (dnsimple_records.py).
- auth_code: `POST .../authorize_transfer_out` answers 204. It removes the transfer lock and
  DNSimple emails the code to the domain's administrative contact; the API never returns the code.
  So the answer is the sentence AUTH_CODE_EMAILED, not a code. The request did succeed, so svc
  records it (an unlock and a transfer-out step). Raising instead would present it as a refusal, and
  each retry would send another email.
- Errors: network failure, timeout, 5xx, 401, 403, 412, an answer that is not JSON or not in the
  documented shape, and 429 (the message names the rate limit and X-RateLimit-Reset) ->
  RegistrarError. 402, and a 400 whose message is about the payment -> PaymentDeclined. A 400/422
  -> RegistrarRejected in DNSimple's words, with the field it names mapped to the port's name
  (phone -> contact.phone, address1 -> contact.street, ...). 404 on a domain's path ->
  NotInAccount. Messages are cut short and never carry the token.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time as clock
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from svc.adapters.registrar import dnsimple_records as records
from svc.adapters.registrar.dnsimple_answers import (
    cents as _cents,
)
from svc.adapters.registrar.dnsimple_answers import (
    charge_of as _charge_of,
)
from svc.adapters.registrar.dnsimple_answers import (
    dollars as _dollars,
)
from svc.adapters.registrar.dnsimple_answers import (
    domain as _domain,
)
from svc.adapters.registrar.dnsimple_answers import (
    expiry as _expiry,
)
from svc.adapters.registrar.dnsimple_answers import (
    get as _get,
)
from svc.adapters.registrar.dnsimple_answers import (
    json_of as _json,
)
from svc.adapters.registrar.dnsimple_answers import (
    key_date as _key_date,
)
from svc.adapters.registrar.dnsimple_answers import (
    names as _names,
)
from svc.adapters.registrar.dnsimple_answers import (
    object as _object,
)
from svc.adapters.registrar.dnsimple_answers import (
    one_year as _one_year,
)
from svc.adapters.registrar.dnsimple_answers import (
    reset as _reset,
)
from svc.adapters.registrar.dnsimple_answers import (
    shape as _shape,
)
from svc.adapters.registrar.dnsimple_answers import (
    state as _state,
)
from svc.adapters.registrar.dnsimple_contact import contact_body
from svc.adapters.registrar.dnsimple_contact import rejected as _rejected
from svc.adapters.registrar.dnsimple_contact import words as _words
from svc.adapters.registrar.port import (
    Contact,
    NameUnavailable,
    NotInAccount,
    PaymentDeclined,
    Quote,
    RegistrarError,
    RegistrarRejected,
    Registration,
)

PRODUCTION_URL = "https://api.dnsimple.com"
SANDBOX_URL = "https://api.sandbox.dnsimple.com"
USER_AGENT = "svc-registrar/1"
TLDS_KEPT_SECONDS = 3600.0
REMEMBERED = 1000  # pending registrations / renewals kept in memory for resends
_NAME = re.compile(r"(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9][a-z0-9-]{0,61}[a-z0-9]")
PENDING = frozenset({"new", "registering", "renewing"})
FAILED = frozenset({"failed", "cancelled"})
HELD = frozenset({"registered", "expired"})
AUTH_CODE_EMAILED = ("DNSimple has emailed the auth code to the domain's administrative contact (DNSimple never "
                     "shows it through its API); the domain's transfer lock is off")
_NO_BODY: Any = object()
T = TypeVar("T")


@dataclass(frozen=True)
class _Answer:
    status: int
    data: Any  # the envelope's `data` (None for 204 and refusals)
    message: str = ""
    errors: dict[str, Any] | None = None


@dataclass(frozen=True)
class _Prices:
    registration_cents: int
    renewal_cents: int
    premium: bool


@dataclass(frozen=True)
class _Renewal:
    start: date  # the expiry the renewal started from
    renewal_id: int | None


class DnsimpleRegistrar:
    name = "dnsimple"

    def __init__(self, *, token: str, account_id: str, sandbox: bool = False, base_url: str | None = None,
                 timeout_seconds: float = 15.0, transport: httpx.AsyncBaseTransport | None = None,
                 poll_attempts: int = 5, poll_delay_seconds: float = 2.0) -> None:
        if not token or not account_id:
            raise ValueError("DNSimple needs an API token and an account id")
        self.sandbox = sandbox
        self.base_url = (base_url or (SANDBOX_URL if sandbox else PRODUCTION_URL)).rstrip("/")
        self.account_id = str(account_id)
        where = base_url or ("DNSimple's sandbox" if sandbox else "DNSimple")
        self.description = f"{where} (account {self.account_id})"
        self._poll_attempts = poll_attempts
        self._poll_delay = poll_delay_seconds
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_seconds), follow_redirects=False, transport=transport,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": USER_AGENT})
        self._contacts: dict[str, int] = {}  # charge label -> the registrant contact made for it
        self._pending: dict[str, str] = {}  # charge label -> its registration's path, until registered
        self._renewals: dict[str, _Renewal] = {}  # renewal key -> what it started from
        self._refunded: dict[str, bool] = {}  # charge references given back (they register nothing)
        self._tlds: tuple[float, tuple[str, ...]] | None = None  # (kept until, the list)

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- the port ---

    async def check(self, names: list[str]) -> list[Quote]:
        return [await self._quote(asked) for asked in names]

    async def charge(self, *, name: str, years: int, amount_cents: int, key: str) -> str:
        name = _domain(name)
        _one_year(years)
        if not key:
            raise RegistrarRejected("a charge needs an idempotency key", field="key")
        prices = await self._prices(name)
        if prices is None:
            raise RegistrarRejected(f"DNSimple does not sell {name}", field="name")
        expected = prices.registration_cents * years
        if amount_cents != expected:
            raise RegistrarRejected(f"the price changed: DNSimple asks {_dollars(expected)} for {name} for {years} "
                                    f"year(s), not {_dollars(amount_cents)}", field="amountCents")
        kind = "premium" if prices.premium else "standard"
        return f"quote:{name}:{years}:{amount_cents}:{kind}:{hashlib.sha256(key.encode()).hexdigest()[:16]}"

    async def refund(self, charge_id: str) -> None:
        _charge_of(charge_id)  # a quote, not a payment: nothing was taken, nothing to give back
        _remember(self._refunded, charge_id, True)

    async def register(self, *, name: str, years: int, contact: Contact, charge_id: str) -> Registration:
        name = _domain(name)
        charged = _charge_of(charge_id)
        if charged.name != name or charged.years != years or charge_id in self._refunded:
            raise RegistrarRejected("the charge was refunded, or made for another name or term", field="chargeId")
        _one_year(years)
        label = "svc-" + hashlib.sha256(charge_id.encode()).hexdigest()[:20]
        held = await self._ours(name, label, await self._domain_data(name))
        if held is not None:
            return held
        waiting = self._pending.get(label)
        if waiting is not None:  # this charge's registration, sent before from this process
            if await self._state(waiting, "registration") not in FAILED:
                raise RegistrarError(f"DNSimple's registration of {name} is still pending; retry")
            del self._pending[label]  # failed or cancelled: not charged, so register again
        body: dict[str, Any] = {"registrant_id": await self._registrant(contact, label), "auto_renew": True,
                                "whois_privacy": False}
        if charged.premium:
            body["premium_price"] = _dollars(charged.amount_cents // years).lstrip("$")
        answer = await self._call("POST", f"{self._registrar(name)}/registrations", f"registering {name}",
                                  body=body, refusals=True)
        if answer.status >= 400:
            if answer.errors:
                raise _rejected(f"registering {name}", answer.message, answer.errors)
            return await self._after_refusal(name, label, answer.message)
        made = _object(answer.data, "the registration")
        state = _get(made, "state", str, "the registration")
        if state in FAILED:
            raise RegistrarRejected(f"DNSimple's registration of {name} was {state}")
        path = f"{self._registrar(name)}/registrations/{_get(made, 'id', int, 'the registration')}"
        _remember(self._pending, label, path)
        # 201 is complete (the documented example still says state "new"); 202 is pending.
        domain = await self._domain_data(name) if state == "registered" or answer.status == 201 else None
        if domain is None or _state(domain) != "registered":
            await self._wait(path, name, "registration", done="registered")
            domain = await self._domain_data(name)
            if domain is None or _state(domain) != "registered":
                raise RegistrarError(f"DNSimple's registration of {name} is still pending; retry")
        self._pending.pop(label, None)
        return await self._registration(name, domain)

    async def set_nameservers(self, name: str, nameservers: list[str]) -> Registration:
        name = _domain(name)
        wanted = [n.strip().lower().rstrip(".") for n in nameservers]
        if not wanted or not all(_NAME.fullmatch(n) for n in wanted):
            raise RegistrarRejected("nameservers must be host names, at least one", field="nameservers")
        answer = await self._call("PUT", f"{self._registrar(name)}/delegation", f"setting {name}'s nameservers",
                                  body=wanted, domain=name, field="nameservers")
        return await self._registration(name, await self._held(name), nameservers=_names(answer.data))

    async def domain(self, name: str) -> Registration:
        name = _domain(name)
        return await self._registration(name, await self._held(name))

    async def renew(self, name: str, *, years: int, key: str) -> Registration:
        name = _domain(name)
        if not 1 <= years <= 9:
            raise RegistrarRejected("DNSimple renews for 1 to 9 years", field="years")
        domain = await self._held(name)
        current = _expiry(domain).date()
        before = self._renewals.get(key)
        start = _key_date(key) or (before.start if before else None)
        if start is not None and current > start:
            return await self._registration(name, domain)  # renewed already (by this key, or since)
        path = f"{self._registrar(name)}/renewals"
        if before is not None and before.renewal_id is not None:
            state = await self._state(f"{path}/{before.renewal_id}", "renewal")
            if state in PENDING:
                raise RegistrarError(f"DNSimple's renewal of {name} is still pending; retry")
            if state == "renewed":
                return await self._registration(name, await self._held(name))
        start = start or current  # (a failed or cancelled renewal was not charged: renew again)
        _remember(self._renewals, key, _Renewal(start, None))
        answer = await self._call("POST", path, f"renewing {name}", body={"period": years}, domain=name)
        made = _object(answer.data, "the renewal")
        renewal_id = _get(made, "id", int, "the renewal")
        _remember(self._renewals, key, _Renewal(start, renewal_id))
        state = _get(made, "state", str, "the renewal")
        if state in FAILED:
            raise RegistrarRejected(f"DNSimple's renewal of {name} was {state}")
        domain = await self._held(name)
        if state != "renewed" and _expiry(domain).date() <= start:
            await self._wait(f"{path}/{renewal_id}", name, "renewal", done="renewed")
            domain = await self._held(name)
        return await self._registration(name, domain)

    async def set_lock(self, name: str, locked: bool) -> Registration:
        name = _domain(name)
        current = await self._lock(name)
        if current != locked:
            answer = await self._call("POST" if locked else "DELETE", f"{self._registrar(name)}/transfer_lock",
                                      f"{'' if locked else 'un'}locking {name}", domain=name)
            current = _get(_object(answer.data, "the transfer lock"), "enabled", bool, "the transfer lock")
        return await self._registration(name, await self._held(name), locked=current)

    async def set_auto_renew(self, name: str, enabled: bool) -> Registration:
        name = _domain(name)
        domain = await self._held(name)
        if _get(domain, "auto_renew", bool, "the domain") != enabled:
            await self._call("PUT" if enabled else "DELETE", f"{self._registrar(name)}/auto_renewal",
                             f"setting {name}'s auto-renewal", domain=name)
        return await self._registration(name, domain, auto_renew=enabled)

    async def tlds(self) -> list[str]:
        """DNSimple's TLDs open for registration, every page (kept an hour: the list barely moves)."""
        if self._tlds is not None and self._tlds[0] > clock.monotonic():
            return list(self._tlds[1])
        found: list[str] = []
        for page in range(1, records.MAX_PAGES + 1):
            answer = await self._call("GET", f"tlds?page={page}&per_page={records.PER_PAGE}", "listing the TLDs")
            found += records.registrable_tlds(answer.data)
            if len(answer.data) < records.PER_PAGE:
                break
        self._tlds = (clock.monotonic() + TLDS_KEPT_SECONDS, tuple(found))
        return found

    async def set_ds(self, name: str, ds: list[str]) -> list[str]:
        name = _domain(name)
        await self._held(name)
        wanted = list(dict.fromkeys(records.normal_ds(text) for text in ds))
        path = f"{self._account()}/domains/{name}/ds_records"
        answer = await self._call("GET", f"{path}?per_page={records.PER_PAGE}", f"reading {name}'s DS records",
                                  domain=name)
        held = {records.ds_text(item): item.get("id") for item in records.listed(answer.data)}
        for text, ident in held.items():
            if text not in wanted:
                await self._call("DELETE", f"{path}/{ident}", f"removing a DS record of {name}", domain=name)
        for text in wanted:
            if text not in held:
                await self._call("POST", path, f"adding a DS record to {name}", body=records.ds_body(text),
                                 domain=name, field="ds")
        return wanted

    async def auth_code(self, name: str) -> str:
        name = _domain(name)
        await self._call("POST", f"{self._registrar(name)}/authorize_transfer_out",
                         f"authorizing {name}'s transfer out", domain=name)
        return AUTH_CODE_EMAILED

    # --- the steps ---

    async def _quote(self, asked: str) -> Quote:
        try:
            name = _domain(asked)
        except RegistrarRejected:
            return Quote(name=asked, available=False, price_cents=None, renewal_cents=None)
        prices = await self._prices(name) if await self._available(name) else None
        if prices is None:
            return Quote(name=name, available=False, price_cents=None, renewal_cents=None)
        return Quote(name=name, available=True, price_cents=prices.registration_cents,
                     renewal_cents=prices.renewal_cents)

    async def _available(self, name: str) -> bool | None:
        """The check's answer; None when DNSimple cannot check the name (400: e.g. its TLD)."""
        checked = await self._call("GET", f"{self._registrar(name)}/check", f"checking {name}", refusals=True)
        if checked.status >= 400:
            return None
        return _get(_object(checked.data, "the check"), "available", bool, "the check")

    async def _prices(self, name: str) -> _Prices | None:
        """The name's prices; None when DNSimple cannot price it (400: e.g. its TLD)."""
        answer = await self._call("GET", f"{self._registrar(name)}/prices", f"pricing {name}", refusals=True)
        if answer.status >= 400:
            return None
        data = _object(answer.data, "the prices")
        return _Prices(registration_cents=_cents(data.get("registration_price"), "the registration price"),
                       renewal_cents=_cents(data.get("renewal_price"), "the renewal price"),
                       premium=data.get("premium") is True)

    async def _registrant(self, contact: Contact, label: str) -> int:
        """A registrant contact for this charge (one per charge: svc never stores contacts)."""
        if label not in self._contacts:
            body = contact_body(contact, label)
            answer = await self._call("POST", f"{self._account()}/contacts", "creating the registrant contact",
                                      body=body)
            _remember(self._contacts, label, _get(_object(answer.data, "the contact"), "id", int, "the contact"))
        return self._contacts[label]

    async def _ours(self, name: str, label: str, domain: dict[str, Any] | None) -> Registration | None:
        """The registration this charge made, if the account holds it; NameUnavailable when the
        account holds the name for another registrant."""
        if domain is None or _state(domain) != "registered":
            return None
        registrant = domain.get("registrant_id")
        if isinstance(registrant, int) and not isinstance(registrant, bool):
            contact = await self._call("GET", f"{self._account()}/contacts/{registrant}", "reading the registrant",
                                       refusals=True)
            if contact.status < 400 and _object(contact.data, "the contact").get("label") == label:
                return await self._registration(name, domain)
        raise NameUnavailable(f"{name} is already registered, for another registrant")

    async def _after_refusal(self, name: str, label: str, message: str) -> Registration:
        """A registration refused without naming a field: ours already, in progress, or taken."""
        domain = await self._domain_data(name)
        held = await self._ours(name, label, domain)
        if held is not None:
            return held
        if domain is not None and _state(domain) == "expired":
            raise NameUnavailable(f"{name} is expired in the DNSimple account: renew or restore it")
        if domain is not None:
            raise RegistrarError(f"DNSimple has {name} in the account, not registered yet (a registration in "
                                 f"progress?): {_words(message)}; retry")
        if await self._available(name) is False:
            raise NameUnavailable(f"{name} is not available: {_words(message)}")
        raise RegistrarRejected(f"DNSimple refused registering {name}: {_words(message)}")

    async def _wait(self, path: str, name: str, what: str, *, done: str) -> None:
        """Poll a registration or renewal until it is `done`; RegistrarError while it is pending."""
        for _ in range(self._poll_attempts):
            await asyncio.sleep(self._poll_delay)
            state = await self._state(path, what)
            if state == done:
                return
            if state in FAILED:
                raise RegistrarRejected(f"DNSimple's {what} of {name} was {state}")
        raise RegistrarError(f"DNSimple's {what} of {name} is still pending; retry")

    async def _state(self, path: str, what: str) -> str:
        answer = await self._call("GET", path, f"reading the {what}")
        return _get(_object(answer.data, f"the {what}"), "state", str, f"the {what}")

    async def _domain_data(self, name: str) -> dict[str, Any] | None:
        answer = await self._call("GET", f"{self._account()}/domains/{name}", f"reading {name}", refusals=True)
        if answer.status == 404:
            return None
        if answer.status >= 400:
            raise RegistrarError(f"DNSimple could not read {name}: {_words(answer.message)}")
        return _object(answer.data, "the domain")

    async def _held(self, name: str) -> dict[str, Any]:
        domain = await self._domain_data(name)
        if domain is None:
            raise NotInAccount(f"the DNSimple account does not hold {name}")
        if _state(domain) not in HELD:
            raise NotInAccount(f"the DNSimple account holds {name} as a DNS zone only, not as a registration")
        return domain

    async def _lock(self, name: str) -> bool:
        answer = await self._call("GET", f"{self._registrar(name)}/transfer_lock", f"reading {name}'s lock",
                                  domain=name)
        return _get(_object(answer.data, "the transfer lock"), "enabled", bool, "the transfer lock")

    async def _registration(self, name: str, domain: dict[str, Any], *, locked: bool | None = None,
                            nameservers: tuple[str, ...] | None = None,
                            auto_renew: bool | None = None) -> Registration:
        if locked is None:
            locked = await self._lock(name)
        if nameservers is None:
            answer = await self._call("GET", f"{self._registrar(name)}/delegation", f"reading {name}'s nameservers",
                                      domain=name)
            nameservers = _names(answer.data)
        if auto_renew is None:
            auto_renew = _get(domain, "auto_renew", bool, "the domain")
        return Registration(name=name, expires_at=_expiry(domain), locked=locked, auto_renew=auto_renew,
                            nameservers=nameservers)

    # --- HTTP ---

    def _account(self) -> str:
        return quote(self.account_id, safe="")

    def _registrar(self, name: str) -> str:
        return f"{self._account()}/registrar/domains/{name}"

    async def _call(self, method: str, path: str, what: str, *, body: Any = _NO_BODY, domain: str | None = None,
                    refusals: bool = False, field: str | None = None) -> _Answer:
        """One request. Outages, 401/403, 429 and garbage raise RegistrarError; 402 and payment
        refusals PaymentDeclined; 404 on a domain's path NotInAccount. Other 400/404/422 raise
        RegistrarRejected (`field` unless DNSimple names one), or are answered (refusals=True)."""
        url = f"{self.base_url}/v2/{path}"
        try:
            if body is _NO_BODY:
                response = await self._http.request(method, url)
            else:
                response = await self._http.request(method, url, json=body)
        except httpx.TimeoutException:
            raise RegistrarError(f"DNSimple did not answer in time ({what})") from None
        except httpx.HTTPError as exc:
            raise RegistrarError(f"could not reach DNSimple ({what}: {type(exc).__name__})") from None
        status = response.status_code
        if status == 429:
            raise RegistrarError(f"DNSimple's rate limit is used up ({what}); it resets at "
                                 f"{_reset(response.headers.get('X-RateLimit-Reset'))}")
        if status >= 500:
            raise RegistrarError(f"DNSimple failed ({what}: HTTP {status})")
        if status == 401:
            raise RegistrarError(f"DNSimple refused the API token ({what}: HTTP 401)")
        if status == 204:
            return _Answer(status, None)
        payload = _json(response, what)
        if 200 <= status < 300:
            if not isinstance(payload, dict) or "data" not in payload:
                raise _shape(what)
            return _Answer(status, payload["data"])
        said = payload.get("message") if isinstance(payload, dict) else None
        listed = payload.get("errors") if isinstance(payload, dict) else None
        message: str = said if isinstance(said, str) else f"HTTP {status}"
        errors: dict[str, Any] = listed if isinstance(listed, dict) else {}
        if status == 402 or (status in (400, 422) and "payment" in message.lower()):
            raise PaymentDeclined(f"DNSimple could not take the payment: {_words(message)}")
        if status == 404 and domain is not None:
            raise NotInAccount(f"the DNSimple account does not hold {domain}")
        if status in (400, 404, 422) and refusals:
            return _Answer(status, None, message, errors)
        if status in (400, 422):
            raise _rejected(what, message, errors, field)
        raise RegistrarError(f"DNSimple refused {what} (HTTP {status}): {_words(message)}")


def _remember(memory: dict[str, T], key: str, value: T) -> None:
    """Keep the newest REMEMBERED entries of an in-process memory (for resends)."""
    memory.pop(key, None)
    memory[key] = value
    while len(memory) > REMEMBERED:
        del memory[next(iter(memory))]
