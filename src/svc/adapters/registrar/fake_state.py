"""The fake registrar's state and its rules (fake.py serves them over HTTP): the price list, the
names held by somebody else, the account's registrations (with their contacts), the charges and
the ledger, and the failures a test queued.

Ledger entries all carry a positive amountCents; the kind says which way the money went ("charge"
and "renewal" from the account, "refund" back to it)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

# Registration and renewal prices by TLD, in cents. Any other TLD is not for sale.
PRICES: dict[str, tuple[int, int]] = {
    "com": (1200, 1400),
    "net": (1300, 1500),
    "org": (1000, 1200),
    "dev": (1500, 1700),
    "io": (3900, 3900),
    "app": (1600, 1800),
}
NAMESERVERS = ("ns1.fake-registrar.test", "ns2.fake-registrar.test")
YEAR = timedelta(days=365)
MAX_YEARS = 10

STEPS = ("check", "tlds", "charge", "refund", "register", "nameservers", "domain", "renew", "lock", "auto-renew",
         "auth-code", "ds")
# timeout: held, then nothing done; lost: done, then the answer held (a client that gave up never sees it).
MODES = ("decline", "reject", "error", "timeout", "lost", "garbage", "taken")
CONTACT_FIELDS = ("name", "email", "phone", "street", "city", "postalCode", "country")

_PHONE = re.compile(r"^\+\d{1,3}\.\d{4,14}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# A DS record as zone-file text: key tag, algorithm, digest type, digest (hex).
_DS = re.compile(r"^(\d{1,5}) (\d{1,3}) (\d{1,3}) ([0-9A-Fa-f]{8,128})$")
MAX_DS = 8


def iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    """An ISO 8601 time; a time without a zone is taken as UTC."""
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def normal_name(name: object) -> str:
    """A domain name as the registrar keeps it: lowercase, without the root's dot."""
    return str(name).strip().rstrip(".").lower()


def is_hostname(name: str) -> bool:
    labels = name.split(".")
    return len(name) <= 253 and len(labels) >= 2 and all(_LABEL.match(label) for label in labels)


class Refusal(Exception):
    """An answer other than success: the status, and the registrar's error body."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "field": self.field}}


@dataclass
class Failure:
    mode: str
    field: str | None = None
    message: str | None = None


@dataclass
class Charge:
    id: str
    name: str
    years: int
    amount_cents: int
    key: str
    status: str = "charged"  # charged | refunded
    used_by: str | None = None  # the name registered with it

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "years": self.years, "amountCents": self.amount_cents,
                "status": self.status}


@dataclass
class Renewal:
    id: str
    name: str
    years: int
    amount_cents: int


@dataclass
class Domain:
    name: str
    expires_at: datetime
    contact: dict[str, str]
    charge_id: str
    locked: bool = True
    auto_renew: bool = True
    nameservers: list[str] = field(default_factory=lambda: list(NAMESERVERS))
    in_account: bool = True
    # The DS records sent to the registry for the domain (zone-file text, digest uppercase).
    ds: list[str] = field(default_factory=list)

    def json(self) -> dict[str, Any]:
        return {"name": self.name, "expiresAt": iso(self.expires_at), "locked": self.locked,
                "autoRenew": self.auto_renew, "nameservers": list(self.nameservers)}

    def admin_json(self) -> dict[str, Any]:
        return {**self.json(), "contact": dict(self.contact), "chargeId": self.charge_id,
                "inAccount": self.in_account, "ds": list(self.ds)}


@dataclass
class Price:
    """A test's override of one name's quote; None keeps the TLD's."""

    price_cents: int | None = None
    renewal_cents: int | None = None
    available: bool | None = None


@dataclass
class RegistrarState:
    prices: dict[str, Price] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)  # held by somebody else
    domains: dict[str, Domain] = field(default_factory=dict)
    charges: dict[str, Charge] = field(default_factory=dict)
    charge_keys: dict[str, str] = field(default_factory=dict)  # idempotency key -> charge id
    renewals: dict[str, Renewal] = field(default_factory=dict)  # by idempotency key
    ledger: list[dict[str, Any]] = field(default_factory=list)
    failures: dict[str, list[Failure]] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    latency_ms: float = 0.0  # how long every API call waits before it is answered (a real registrar's pace)

    # --- prices and availability ---

    def quote(self, name: str) -> dict[str, Any]:
        tld = name.rsplit(".", 1)[-1] if "." in name else ""
        price, renewal = PRICES.get(tld, (None, None)) if is_hostname(name) else (None, None)
        override = self.prices.get(name)
        available = price is not None
        if override is not None:
            price = override.price_cents if override.price_cents is not None else price
            renewal = override.renewal_cents if override.renewal_cents is not None else renewal
            available = override.available if override.available is not None else price is not None
        held = name in self.taken or name in self.domains
        return {"name": name, "available": bool(available and not held and price is not None),
                "priceCents": price, "renewalCents": renewal}

    # --- money ---

    def charge(self, *, name: str, years: int, amount_cents: int, key: str) -> tuple[Charge, bool]:
        """The charge for `key`: made now (True), or the one made before (False)."""
        if key in self.charge_keys:
            made = self.charges[self.charge_keys[key]]
            if (made.name, made.years, made.amount_cents) != (name, years, amount_cents):
                raise Refusal(422, "idempotency_mismatch", "this idempotency key was used for another charge",
                              "idempotencyKey")
            return made, False
        price = self.quote(name)["priceCents"]
        if price is None:
            raise Refusal(422, "not_for_sale", f"{name} is not for sale here", "name")
        if amount_cents != price * years:
            raise Refusal(422, "price_changed", f"{years} year(s) of {name} cost {price * years} cents, "
                          f"not {amount_cents}", "amountCents")
        made = Charge(id=new_id("ch"), name=name, years=years, amount_cents=amount_cents, key=key)
        self.charges[made.id] = made
        self.charge_keys[key] = made.id
        self._enter("charge", made.id, name, amount_cents)
        return made, True

    def refund(self, charge_id: str) -> Charge:
        made = self.charges.get(charge_id)
        if made is None:
            raise Refusal(404, "not_found", f"no charge {charge_id}")
        if made.status != "refunded":
            made.status = "refunded"
            self._enter("refund", made.id, made.name, made.amount_cents)
        return made

    def _enter(self, kind: str, charge_id: str, name: str, amount_cents: int) -> None:
        self.ledger.append({"id": new_id("le"), "kind": kind, "chargeId": charge_id, "name": name,
                            "amountCents": amount_cents, "at": iso(datetime.now(UTC))})

    # --- registrations ---

    def register(self, *, name: str, years: int, contact: dict[str, str], charge_id: str) -> tuple[Domain, bool]:
        """The registration paid by `charge_id`: made now (True), or the one made before (False)."""
        mine = self.domains.get(name)
        if mine is not None and mine.in_account and mine.charge_id == charge_id:
            return mine, False
        if not self.quote(name)["available"]:
            raise Refusal(409, "unavailable", f"{name} is not available")
        made = self.charges.get(charge_id)
        problem = ("there is no such charge" if made is None
                   else "the charge was refunded" if made.status != "charged"
                   else f"the charge is for {made.name}" if made.name != name
                   else f"the charge is for {made.years} year(s)" if made.years != years
                   else "the charge paid for another registration" if made.used_by is not None
                   else None)
        if problem is not None or made is None:
            raise Refusal(422, "bad_charge", problem or "there is no such charge", "chargeId")
        made.used_by = name
        domain = Domain(name=name, expires_at=datetime.now(UTC).replace(microsecond=0) + years * YEAR,
                        contact=contact, charge_id=charge_id)
        self.domains[name] = domain
        return domain, True

    def in_account(self, name: str) -> Domain:
        domain = self.domains.get(name)
        if domain is None or not domain.in_account:
            raise Refusal(404, "not_found", f"{name} is not in this account")
        return domain

    def renew(self, name: str, *, years: int, key: str) -> Domain:
        domain = self.in_account(name)
        done = self.renewals.get(key)
        if done is not None:
            if (done.name, done.years) != (name, years):
                raise Refusal(422, "idempotency_mismatch", "this idempotency key was used for another renewal",
                              "idempotencyKey")
            return domain
        renewal = self.quote(name)["renewalCents"]
        if renewal is None:
            raise Refusal(422, "not_for_sale", f"{name} cannot be renewed here", "name")
        until = domain.expires_at + years * YEAR
        if until > datetime.now(UTC) + MAX_YEARS * YEAR:
            raise Refusal(422, "too_long", f"a registration runs {MAX_YEARS} years ahead at most", "years")
        made = Renewal(id=new_id("rn"), name=name, years=years, amount_cents=renewal * years)
        self.renewals[key] = made
        domain.expires_at = until
        self._enter("renewal", made.id, name, made.amount_cents)
        return domain

    # --- what a test does ---

    def take(self, name: str) -> None:
        self.taken.add(name)

    def transfer_away(self, name: str) -> None:
        domain = self.domains.get(name)
        if domain is not None:
            domain.in_account = False
        self.taken.add(name)

    def queue(self, step: str, failure: Failure, times: int = 1) -> None:
        if step not in STEPS:
            raise Refusal(400, "bad_request", f"no step {step!r}; one of {', '.join(STEPS)}", "step")
        if failure.mode not in MODES:
            raise Refusal(400, "bad_request", f"no mode {failure.mode!r}; one of {', '.join(MODES)}", "mode")
        self.failures.setdefault(step, []).extend([failure] * max(times, 0))

    def next_failure(self, step: str) -> Failure | None:
        queued = self.failures.get(step)
        return queued.pop(0) if queued else None


# --- reading requests ---


def need_years(body: dict[str, Any]) -> int:
    years = body.get("years")
    if not isinstance(years, int) or isinstance(years, bool) or not 1 <= years <= MAX_YEARS:
        raise Refusal(422, "invalid_years", f"years must be a whole number from 1 to {MAX_YEARS}", "years")
    return years


def need_name(value: object, field_name: str = "name") -> str:
    if not isinstance(value, str) or not value.strip():
        raise Refusal(422, "invalid_name", "a domain name is required", field_name)
    return normal_name(value)


def need_text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise Refusal(422, "invalid_request", f"{key} is required", key)
    return value


def need_bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key)
    if not isinstance(value, bool):
        raise Refusal(422, "invalid_request", f"{key} must be true or false", key)
    return value


def need_contact(value: object) -> dict[str, str]:
    """The registrant, checked as this registrar checks it."""
    if not isinstance(value, dict):
        raise Refusal(422, "invalid_contact", "a contact is required", "contact")
    contact: dict[str, str] = {}
    for key in CONTACT_FIELDS:
        text = value.get(key)
        if not isinstance(text, str) or not text.strip():
            raise Refusal(422, "invalid_contact", f"the contact's {key} is required", f"contact.{key}")
        contact[key] = text.strip()
    if "@" not in contact["email"]:
        raise Refusal(422, "invalid_contact", "the contact's email is not an email address", "contact.email")
    if not _PHONE.match(contact["phone"]):
        raise Refusal(422, "invalid_contact", "the contact's phone must look like +1.5555551234", "contact.phone")
    if not _COUNTRY.match(contact["country"]):
        raise Refusal(422, "invalid_contact", "the contact's country must be two uppercase letters (ISO 3166-1)",
                      "contact.country")
    return contact


def need_ds(value: object) -> list[str]:
    """DS records as zone-file text, normalised (single spaces, digest uppercase), each once."""
    if not isinstance(value, list) or len(value) > MAX_DS:
        raise Refusal(422, "invalid_ds", f"ds must be a list of at most {MAX_DS} DS records", "ds")
    out: list[str] = []
    for item in value:
        match = _DS.match(" ".join(item.split())) if isinstance(item, str) else None
        if match is None:
            raise Refusal(422, "invalid_ds", "a DS record is key tag, algorithm, digest type and hex digest "
                          "(12345 13 2 3A1F...)", "ds")
        text = f"{int(match[1])} {int(match[2])} {int(match[3])} {match[4].upper()}"
        if text not in out:
            out.append(text)
    return out


def need_nameservers(value: object) -> list[str]:
    if not isinstance(value, list) or not 2 <= len(value) <= 13:
        raise Refusal(422, "invalid_nameservers", "from 2 to 13 nameservers are required", "nameservers")
    hosts = [normal_name(host) if isinstance(host, str) else "" for host in value]
    for host in hosts:
        if not is_hostname(host):
            raise Refusal(422, "invalid_nameservers", f"{host or 'a nameserver'} is not a host name", "nameservers")
    if len(set(hosts)) != len(hosts):
        raise Refusal(422, "invalid_nameservers", "a nameserver is listed twice", "nameservers")
    return hosts
