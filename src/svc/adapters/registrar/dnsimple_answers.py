"""Reading DNSimple's answers (dnsimple.py's calls): JSON within a size bound, the documented
shapes or a RegistrarError, dollars as exact cents, dates, and svc's charge references."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, TypeVar

import httpx

from svc.adapters.registrar.dnsimple_contact import words as _words
from svc.adapters.registrar.port import RegistrarError, RegistrarRejected
from svc.kit import money

T = TypeVar("T")
MAX_BODY = 1024 * 1024
NAME = re.compile(r"(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9][a-z0-9-]{0,61}[a-z0-9]")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Charge:
    name: str
    years: int
    amount_cents: int
    premium: bool


def json_of(response: httpx.Response, what: str) -> Any:
    if len(response.content) > MAX_BODY:
        raise RegistrarError(f"DNSimple's answer is too large ({what})")
    try:
        return json.loads(response.content, parse_float=Decimal)
    except ValueError:
        raise RegistrarError(f"DNSimple's answer is not JSON ({what}: HTTP {response.status_code})") from None


def shape(what: str) -> RegistrarError:
    return RegistrarError(f"DNSimple answered something that is not its API ({what})")


def object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise shape(what)
    return value


def get(data: dict[str, Any], key: str, kind: type[T], what: str) -> T:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise shape(what)
    return value


def state(domain: dict[str, Any] | None) -> str | None:
    return None if domain is None else get(domain, "state", str, "the domain")


def names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise shape("the nameservers")
    return tuple(n.lower().rstrip(".") for n in value)


def cents(value: Any, what: str) -> int:
    """Dollars (a JSON number, read as Decimal) in whole cents, rounding half up; never float."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
        raise shape(what)
    try:
        dollars = Decimal(value)
    except InvalidOperation:
        raise shape(what) from None
    if not dollars.is_finite() or dollars < 0:
        raise shape(what)
    return int((dollars * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def expiry(domain: dict[str, Any]) -> datetime:
    at, on = domain.get("expires_at"), domain.get("expires_on")
    try:
        if isinstance(at, str):
            parsed = datetime.fromisoformat(at)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        if isinstance(on, str):
            return datetime.combine(date.fromisoformat(on), time(), UTC)
    except ValueError:
        pass
    raise shape("the domain's expiry")


def key_date(key: str) -> date | None:
    """The expiry a renewal key says it starts from: its last ':'-separated part that is a date."""
    for part in reversed(key.split(":")):
        if DATE.fullmatch(part):
            with contextlib.suppress(ValueError):
                return date.fromisoformat(part)
    return None


def reset(header: str | None) -> str:
    try:
        return datetime.fromtimestamp(int(header or ""), UTC).isoformat() + " (X-RateLimit-Reset)"
    except (ValueError, OverflowError, OSError):
        return "the time in X-RateLimit-Reset"


# --- the port's values in DNSimple's terms ---


def domain(name: str) -> str:
    cleaned = name.strip().lower().rstrip(".")
    if not NAME.fullmatch(cleaned):
        raise RegistrarRejected(f"{_words(name)[:80]!r} is not a domain name", field="name")
    return cleaned


def one_year(years: int) -> None:
    if years != 1:
        raise RegistrarRejected("DNSimple registers a domain for one year (its registration takes no term): "
                                "register for 1 year, then renew", field="years")


def charge_of(charge_id: str) -> Charge:
    parts = charge_id.split(":")
    if len(parts) != 6 or parts[0] != "quote" or not parts[2].isdigit() or not parts[3].isdigit() \
            or parts[4] not in ("standard", "premium"):
        raise RegistrarRejected("not a charge of the DNSimple registrar", field="chargeId")
    return Charge(name=parts[1], years=int(parts[2]), amount_cents=int(parts[3]), premium=parts[4] == "premium")


def dollars(cents: int) -> str:
    return money.dollars(cents * money.PER_CENT)
